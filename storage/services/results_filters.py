"""The Results table's "failed" and "disagree" filters as queries of response ids
(``storage.services.results_query`` and ``results_sql`` use them)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, or_, select, union
from sqlalchemy.orm import Session

from storage import models as m
from storage.repositories import results as repo


def failed_query(run_ids: Sequence[int]):
    """Responses on which a selected run failed, or fell back on a criterion."""
    g, gc = m.GradeRow, m.GradeCriterionRow
    whole = select(g.response_id).where(g.run_id.in_(list(run_ids)),
                                         or_(g.score.is_(None), g.error.is_not(None)))
    partial = (select(g.response_id).join(gc, gc.grade_id == g.id)
               .where(g.run_id.in_(list(run_ids)), gc.error.is_not(None)))
    return union(whole, partial)


def verdicts_differ_query(with_verdicts: Sequence[int]):
    return repo.verdicts_differ_query(with_verdicts)


def scores_differ_query(groups: Sequence[Sequence[int]], score_gap: float):
    g = m.GradeRow
    parts = [select(g.response_id)
             .where(g.run_id.in_(list(group)), g.score.is_not(None))
             .group_by(g.response_id)
             .having(func.max(g.score) - func.min(g.score) > score_gap)
             for group in groups]
    return union(*parts) if len(parts) > 1 else parts[0] if parts else None


def disagree_parts(session: Session, runs: Sequence[int], score_gap: float):
    """(verdicts differ, scores differ) as queries of response ids, None when they cannot."""
    with_verdicts, groups = repo.comparable_groups(session, list(runs))
    verdicts = verdicts_differ_query(with_verdicts) if len(with_verdicts) >= 2 else None
    return verdicts, scores_differ_query(groups, score_gap)
