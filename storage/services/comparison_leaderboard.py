"""A Bradley-Terry leaderboard of the sources compared on one rubric version, over every
finished comparison on it (grading.pairwise.bradley_terry): each judged pair's winner is one
outcome (B 1, tie 0.5, A 0) between its two sources, named by their labels.

One rubric version, not the rubric: a pair's winner is weighed on the version's criteria,
and two versions may ask different things. Judges are pooled (each comparison's winners are
its own judge's). ``people_leaderboard`` ranks by people's preferences instead: only the
pairs people decided on every criterion (adjudicated or agreed), whatever the comparison's
status, each pair's winner aggregated from people's sides by the one aggregation function;
a blind reviewer's board uses only the pairs they answered whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select

from grading.pairwise.bradley_terry import Standing, leaderboard
from storage import models as m
from storage.engine import SessionFactory
from storage.repositories import rubrics as rubric_repo
from storage.services import pair_consensus
from storage.services.blindness import sight_of
from storage.services.pair_results import people_report
from storage.services.pair_reviews import comparison_criteria, may_see_pair
from storage.services.reviewers import Actor, Role, require

OUTCOME = {"B": 1.0, "TIE": 0.5, "A": 0.0}  # for the source shown as B


@dataclass(frozen=True)
class RubricLeaderboard:
    rubric_version_id: int
    comparison_ids: tuple[int, ...]  # the finished comparisons behind it
    judges: tuple[str, ...]
    pairs: int  # judged pairs behind it (people: pairs people decided on every criterion)
    standings: tuple[Standing, ...]
    basis: Literal["judge", "people"] = "judge"
    # people: the pairs of the version's comparisons there were to decide
    candidate_pairs: int | None = None


def rubric_leaderboard(sessions: SessionFactory, rubric_version_id: int, *,
                       resamples: int = 200, seed: int = 0) -> RubricLeaderboard | None:
    """The leaderboard over the version's finished comparisons; None when fewer than two
    sources have a judged pair."""
    c, p = m.ComparisonRow, m.ComparisonPairRow
    with sessions() as session:
        rows = session.execute(
            select(c.id, c.model, c.a_label, c.b_label, p.winner)
            .join(p, p.comparison_id == c.id)
            .where(c.rubric_version_id == rubric_version_id, c.status == "done",
                   p.kind == "pair", p.state == "done", p.winner.is_not(None))
            .order_by(c.id, p.position)).all()
    outcomes = [(a, b, OUTCOME[winner]) for _cid, _model, a, b, winner in rows if a != b]
    if len({s for a, b, _ in outcomes for s in (a, b)}) < 2:
        return None
    return RubricLeaderboard(
        rubric_version_id=rubric_version_id,
        comparison_ids=tuple(sorted({row[0] for row in rows})),
        judges=tuple(sorted({row[1] for row in rows})), pairs=len(outcomes),
        standings=tuple(leaderboard(outcomes, resamples=resamples, seed=seed)))


def people_leaderboard(sessions: SessionFactory, rubric_version_id: int, *, actor: Actor,
                       resamples: int = 200, seed: int = 0) -> RubricLeaderboard | None:
    """The leaderboard over the pairs people decided (every criterion adjudicated or
    agreed) in the version's comparisons; None when fewer than two sources have one."""
    require(actor, Role.REVIEWER, "read people's preferences")
    sight = sight_of(actor)
    c, p = m.ComparisonRow, m.ComparisonPairRow
    with sessions() as session:
        rubric_repo.get_version(session, rubric_version_id)  # NotFoundError if none
        comparisons = list(session.scalars(select(c).where(
            c.rubric_version_id == rubric_version_id).order_by(c.id)))
        criteria = {row.id: comparison_criteria(session, row) for row in comparisons}
        rows = session.execute(
            select(p.id, p.comparison_id).where(
                p.comparison_id.in_([row.id for row in comparisons]), p.kind == "pair")
            .order_by(p.comparison_id, p.position)).all()
        ids = [pid for pid, _cid in rows]
        reviews, _adj = pair_consensus.current(session, ids)
        decisions = pair_consensus.decisions(session, ids)
    by_id = {row.id: row for row in comparisons}
    outcomes, used = [], set()
    for pid, cid in rows:
        positions = [q.position for q in criteria[cid]]
        decided = decisions.get(pid, {})
        if not may_see_pair(sight, reviews.get(pid, {}), positions) or any(
                position not in decided or decided[position].status == "disputed"
                for position in positions):
            continue
        winner = people_report(criteria[cid], {n: decided[n].side for n in positions}).winner
        row = by_id[cid]
        if winner is not None and row.a_label != row.b_label:
            outcomes.append((row.a_label, row.b_label, OUTCOME[winner]))
            used.add(cid)
    if len({s for a, b, _ in outcomes for s in (a, b)}) < 2:
        return None
    return RubricLeaderboard(
        rubric_version_id=rubric_version_id, comparison_ids=tuple(sorted(used)),
        judges=("people",), pairs=len(outcomes),
        standings=tuple(leaderboard(outcomes, resamples=resamples, seed=seed)),
        basis="people", candidate_pairs=len(rows))
