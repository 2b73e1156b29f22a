"""Per-reviewer verdicts -> the human verdict that enters effective scores.

The rule, per (response, criterion):

1. **adjudicated** — an adjudicator has given a verdict: it applies.
2. **agreed** — otherwise, every reviewer who answered gave the same verdict: it applies.
3. **disputed** — otherwise no human verdict applies; the judge's verdict stands, and the
   criterion waits in the adjudication queue.

CANNOT_ASSESS is an answer like the others: MET from one reviewer and CANNOT_ASSESS from
another is a dispute. Verdicts carry forward to later versions of the same rubric while the
criterion's requirement text stays the same (``repositories.verdicts.carry_sources``); per
reviewer (and for the adjudication) the verdict given on the newest version counts. A
verdict that is not one of the criterion's choices on the asked version (MET on a criterion
that became multi-choice, an option the version dropped) does not carry.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from sqlalchemy.orm import Session

from grading.options import fits_choices
from storage.convert import human_verdict_info
from storage.dto import HumanDecision, HumanVerdictInfo
from storage.repositories import verdicts as repo

# response id -> criterion id (of the asked version) -> decision
Decisions = dict[int, dict[int, HumanDecision]]


def decide(criterion_id: int, reviews: Sequence[HumanVerdictInfo],
           adjudication: HumanVerdictInfo | None,
           versions: dict[int, int] | None = None,
           this_version: int | None = None) -> HumanDecision | None:
    """The decision from each reviewer's current verdict and the current adjudication.

    ``versions`` maps a verdict id to the number of the version it was given on, to say
    where a carried verdict came from. None when nobody has answered.
    """
    ordered = tuple(sorted(reviews, key=lambda h: h.id))
    if adjudication is None and not ordered:
        return None
    if adjudication is not None:
        status, verdict, applied = "adjudicated", adjudication.verdict, adjudication
    elif len({h.choice for h in ordered}) == 1:  # the same verdict, or the same option
        status, verdict, applied = "agreed", ordered[0].verdict, ordered[-1]
    else:
        status, verdict, applied = "disputed", None, None
    carried = None
    if applied is not None and versions is not None:
        number = versions.get(applied.id)
        carried = number if number is not None and number != this_version else None
    return HumanDecision(criterion_id=criterion_id, status=status, verdict=verdict,
                         applied=applied, reviews=ordered, adjudication=adjudication,
                         carried_from=carried)


def gather(session: Session, response_ids: Iterable[int], rubric_version_id: int,
           criteria: Iterable[int] | None = None,
           ) -> tuple[dict[int, dict[int, list[HumanVerdictInfo]]],
                      dict[int, dict[int, HumanVerdictInfo | None]], dict[int, int], int]:
    """Each stream's current verdict mapped onto this version's criteria (carry included).

    ``criteria``: only these criteria of the version. Returns (reviews[response][criterion],
    adjudication[response][criterion], version number per verdict id, this version's number).
    """
    sources = repo.carry_sources(session, rubric_version_id)
    this_version = max((n for cid, (target, n) in sources.items() if cid == target),
                       default=0)
    if criteria is not None:  # only these criteria of the version (and what carries in)
        wanted = set(criteria)
        sources = {cid: found for cid, found in sources.items() if found[0] in wanted}
    best: dict[tuple[int, int, str], tuple[int, HumanVerdictInfo]] = {}
    numbers: dict[int, int] = {}
    choices = repo.choice_keys(session, {target for target, _n in sources.values()})
    for row, prev in repo.current_rows(session, response_ids, sources):
        target, number = sources[row.criterion_id]
        if row.criterion_id != target and not fits_choices(choices[target], row.option,
                                                           row.verdict):
            continue  # carried from a version where the criterion had other choices
        key = (row.response_id, target, row.stream)
        # Per stream the verdict given on the newest version counts.
        if key not in best or number > best[key][0]:
            # Carried verdicts are keyed by the criterion of this version they apply to;
            # ``rubric_version_id`` still names the version they were given on.
            best[key] = (number, replace(human_verdict_info(row, prev), criterion_id=target))
            numbers[row.id] = number
    reviews: dict[int, dict[int, list[HumanVerdictInfo]]] = defaultdict(
        lambda: defaultdict(list))
    adjudications: dict[int, dict[int, HumanVerdictInfo | None]] = defaultdict(dict)
    for (rid, cid, _stream), (_n, info) in best.items():
        if info.adjudication:
            adjudications[rid][cid] = info
        else:
            reviews[rid][cid].append(info)
    return reviews, adjudications, numbers, this_version


def decisions(session: Session, response_ids: Iterable[int],
              rubric_version_id: int, criteria: Iterable[int] | None = None) -> Decisions:
    """The human decision of every answered criterion of these responses under a version
    (``criteria``: of these criteria of the version only)."""
    reviews, adjudications, numbers, this_version = gather(
        session, list(response_ids), rubric_version_id, criteria)
    found: Decisions = defaultdict(dict)
    for rid in set(reviews) | set(adjudications):
        for cid in set(reviews.get(rid, {})) | set(adjudications.get(rid, {})):
            decision = decide(cid, reviews.get(rid, {}).get(cid, ()),
                              adjudications.get(rid, {}).get(cid), numbers, this_version)
            if decision is not None:
                found[rid][cid] = decision
    return dict(found)


def decisions_of(session: Session, keys: Iterable[tuple[int, int]],
                 rubric_version_id: int) -> Decisions:
    """The decisions on these (response, criterion of the version) only: per criterion, the
    verdicts of its responses, so a few disputed criteria do not read whole responses."""
    found: Decisions = defaultdict(dict)
    for rids, cids in same_responses(keys):
        for rid, per in decisions(session, rids, rubric_version_id, cids).items():
            found[rid].update(per)
    return dict(found)


def same_responses(keys: Iterable[tuple[int, int]]) -> list[tuple[list[int], list[int]]]:
    """(responses, criteria) groups whose products are exactly these (response, criterion)
    keys: the criteria asked of the same responses share one group (a save of several
    criteria of one response is one group, read by one query instead of one per criterion)."""
    by_criterion: dict[int, set[int]] = defaultdict(set)
    for rid, cid in keys:
        by_criterion[cid].add(rid)
    groups: dict[frozenset[int], list[int]] = defaultdict(list)
    for cid, rids in by_criterion.items():
        groups[frozenset(rids)].append(cid)
    return [(sorted(rids), sorted(cids)) for rids, cids in groups.items()]
