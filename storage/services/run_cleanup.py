"""Deleting grading runs with the rows made from them alone.

A panel is computed from its member runs, and a rewording trial re-asks a run's judge: neither
holds a person's judgment, so they go with the runs (a dataset's or a rubric's deletion) —
otherwise the database refuses to delete the runs they point at.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, func, select

from storage import models as m


def count_panels(session, run_ids: Sequence[int]) -> int:
    """The panels ``delete_runs`` deletes with these runs."""
    if not run_ids:
        return 0
    return session.scalar(select(func.count(func.distinct(m.PanelMemberRow.panel_id)))
                          .where(m.PanelMemberRow.run_id.in_(list(run_ids)))) or 0


def delete_runs(session, run_ids: Sequence[int]) -> None:
    """Delete these runs (grades cascade) and the panels and trials built on them."""
    if not run_ids:
        return
    session.execute(delete(m.PanelRow).where(m.PanelRow.id.in_(
        select(m.PanelMemberRow.panel_id).where(m.PanelMemberRow.run_id.in_(run_ids)))))
    session.execute(delete(m.CriterionTrialRow)
                    .where(m.CriterionTrialRow.base_run_id.in_(run_ids)))
    session.execute(delete(m.RunRow).where(m.RunRow.id.in_(run_ids)))
