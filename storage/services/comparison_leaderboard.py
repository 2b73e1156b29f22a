"""A Bradley-Terry leaderboard of the sources compared on one rubric version, over every
finished comparison on it (grading.pairwise.bradley_terry): each judged pair's winner is one
outcome (B 1, tie 0.5, A 0) between its two sources, named by their labels.

One rubric version, not the rubric: a pair's winner is weighed on the version's criteria,
and two versions may ask different things. Judges are pooled (each comparison's winners are
its own judge's); the judge's results, not people's corrections.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from grading.pairwise.bradley_terry import Standing, leaderboard
from storage import models as m
from storage.engine import SessionFactory

OUTCOME = {"B": 1.0, "TIE": 0.5, "A": 0.0}  # for the source shown as B


@dataclass(frozen=True)
class RubricLeaderboard:
    rubric_version_id: int
    comparison_ids: tuple[int, ...]  # the finished comparisons behind it
    judges: tuple[str, ...]
    pairs: int  # judged pairs behind it
    standings: tuple[Standing, ...]


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
