"""People's preferences on a pair -> the preference that replaces the judge's, per criterion.

The same rule as single verdicts (storage.services.consensus), per (pair, criterion):

1. **adjudicated** — an adjudicator has given a preference: it applies.
2. **agreed** — otherwise, every reviewer who answered gave the same side: it applies.
3. **disputed** — otherwise no person's preference applies; the judge's stands, and the
   criterion waits in the adjudication queue.

CANNOT_ASSESS is an answer like the others (A from one reviewer and CANNOT_ASSESS from
another is a dispute); an agreed CANNOT_ASSESS leaves the criterion out of the pair's
result, as it does for the judge.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy.orm import Session

from grading.pairwise.parsing import Side
from storage import models as m
from storage.repositories import pair_reviews as repo

Status = Literal["agreed", "disputed", "adjudicated"]


@dataclass(frozen=True)
class PairPreferenceInfo:
    """One person's current (or past) preference, in the comparison's own terms."""

    id: int
    pair_id: int
    position: int
    criterion_id: int | None
    side: Side
    swapped: bool  # the reviewer was shown B on the left
    reviewer_key: str
    reviewer: str
    note: str
    adjudication: bool
    created_at: datetime
    replaces_id: int | None


@dataclass(frozen=True)
class PairDecision:
    position: int
    status: Status
    side: Side | None  # None when disputed: the judge's preference stands
    applied: PairPreferenceInfo | None
    reviews: tuple[PairPreferenceInfo, ...]
    adjudication: PairPreferenceInfo | None


# pair id -> position -> decision
PairDecisions = dict[int, dict[int, PairDecision]]


def info(row: m.PairReviewRow) -> PairPreferenceInfo:
    return PairPreferenceInfo(
        id=row.id, pair_id=row.pair_id, position=row.position, criterion_id=row.criterion_id,
        side=row.side, swapped=row.swapped, reviewer_key=row.reviewer_key,  # type: ignore[arg-type]
        reviewer=row.reviewer, note=row.note, adjudication=row.adjudication,
        created_at=row.created_at, replaces_id=row.replaces_id)


def decide(position: int, reviews: Sequence[PairPreferenceInfo],
           adjudication: PairPreferenceInfo | None) -> PairDecision | None:
    """The decision from each reviewer's current preference and the current adjudication;
    None when nobody has answered."""
    ordered = tuple(sorted(reviews, key=lambda p: p.id))
    if adjudication is None and not ordered:
        return None
    if adjudication is not None:
        return PairDecision(position, "adjudicated", adjudication.side, adjudication,
                            ordered, adjudication)
    if len({p.side for p in ordered}) == 1:
        return PairDecision(position, "agreed", ordered[0].side, ordered[-1], ordered, None)
    return PairDecision(position, "disputed", None, None, ordered, None)


def current(session: Session, pair_ids: Iterable[int]
            ) -> tuple[dict[int, dict[int, list[PairPreferenceInfo]]],
                       dict[int, dict[int, PairPreferenceInfo]]]:
    """(reviews[pair][position], adjudication[pair][position]): each stream's current one."""
    reviews: dict[int, dict[int, list[PairPreferenceInfo]]] = defaultdict(
        lambda: defaultdict(list))
    adjudications: dict[int, dict[int, PairPreferenceInfo]] = defaultdict(dict)
    for row in repo.current_rows(session, pair_ids):
        if row.adjudication:
            adjudications[row.pair_id][row.position] = info(row)
        else:
            reviews[row.pair_id][row.position].append(info(row))
    return reviews, adjudications


def decisions(session: Session, pair_ids: Iterable[int]) -> PairDecisions:
    """The people's decision on every answered criterion of these pairs."""
    reviews, adjudications = current(session, list(pair_ids))
    found: PairDecisions = defaultdict(dict)
    for pid in set(reviews) | set(adjudications):
        for position in set(reviews.get(pid, {})) | set(adjudications.get(pid, {})):
            decision = decide(position, reviews.get(pid, {}).get(position, ()),
                              adjudications.get(pid, {}).get(position))
            if decision is not None:
                found[pid][position] = decision
    return dict(found)
