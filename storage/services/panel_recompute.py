"""A panel's grades decided again from its members' grades, as every read did before the
decisions were stored (``panel_upkeep``): for the responses a member still grading has not
graded yet, for decisions stored under another tie rule, and for the tests and the benchmark
that compare the stored decisions with them."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from storage import models as m
from storage.dto import CriterionInfo
from storage.repositories import datasets as dataset_repo
from storage.repositories import runs as run_repo
from storage.services import panel_ties
from storage.services.panel_decide import MemberVotes, PanelGrade, decide

ACTIVE_STATUSES = ("queued", "running")


def recompute(session, panel: m.PanelRow, criteria: list[CriterionInfo],
                response_ids: Sequence[int] | None) -> list[PanelGrade]:
    members = list(panel.members)
    by_member = [
        {g.response_id: g for g in run_repo.grade_infos_for_run(session, member.run_id,
                                                                 response_ids)}
        for member in members
    ]
    graded = sorted(set().union(*[set(grades) for grades in by_member]))
    responses = {r.id: r for r in dataset_repo.get_responses(session, graded)}
    scoring, tie_rule = panel_ties.read(panel.scoring)
    weights = [member.weight for member in members] if panel.rule == "weighted" else None
    grading = still_grading(session, [member.run_id for member in members])
    return [
        decide(panel.id, (panel.rule, tie_rule), weights, scoring, criteria,
               [None if (g := grades.get(response_id)) is None else MemberVotes.of(g)
                for grades in by_member], response_id,
               {"output": responses[response_id].output,
                "thinking": responses[response_id].thinking or ""},
               [member.run_id if member.run_id in grading and response_id not in grades
                else None for member, grades in zip(members, by_member, strict=True)])
        for response_id in graded
    ]


def still_grading(session, run_ids: list[int]) -> set[int]:
    """The member runs that may still grade more responses (queued or running)."""
    return set(session.scalars(select(m.RunRow.id).where(
        m.RunRow.id.in_(run_ids), m.RunRow.status.in_(ACTIVE_STATUSES))))
