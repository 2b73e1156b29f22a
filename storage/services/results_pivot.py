"""The runs' scores of every response as one row per response (storage.services.
results_query's matched set on PostgreSQL): one GROUP BY over the grades' index in response
order (``ix_grades_compared``: response, run, score), merged with the responses, instead of
one join per run that hashes each run's 100,000 grades."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import case, func, literal, select

from storage import models as m


def score_name(run_id: int) -> str:
    return f"s{run_id}"


def kept_name(run_id: int) -> str:
    return f"h{run_id}"


def run_scores(run_ids: Sequence[int]):
    """(graded, kept): subqueries with one row per response, ``response_id`` and per run
    ``s<run>`` — the run's grade's score (graded) or its kept effective score (kept, from
    ``effective_run_scores``) — and in kept ``h<run>``, not NULL where the run has a kept
    row for the response. A run has at most one grade and one kept row per response (their
    unique keys), so the MAX of a run's is that row's value, NULL where it has none."""
    runs = list(run_ids)
    g, e = m.GradeRow, m.EffectiveRunScoreRow
    graded = (select(g.response_id,
                     *[func.max(case((g.run_id == run, g.score))).label(score_name(run))
                       for run in runs])
              .where(g.run_id.in_(runs)).group_by(g.response_id).subquery("graded"))
    kept = (select(e.response_id,
                   *[column for run in runs for column in (
                       func.max(case((e.run_id == run, literal(1)))).label(kept_name(run)),
                       func.max(case((e.run_id == run, e.score))).label(score_name(run)))])
            .where(e.run_id.in_(runs)).group_by(e.response_id).subquery("kept_scores"))
    return graded, kept
