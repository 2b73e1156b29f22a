"""How far a panel's members agree with each other, per criterion (Krippendorff's alpha on
the members' grades, the verdicts the panel combines).

A MET/UNMET criterion's alpha is computed from counts: per (criterion, response) the
members' MET, UNMET and CANNOT_ASSESS answers, read from the members' grades' verdict keys
(``member_units``; the database's ``GROUP BY`` for the responses the keys do not tell),
summed per criterion, plus the units where members disagree, in the order the units were
met (``grading.agreement.alpha_from_counts``). A multi-choice criterion's alpha reads the
members' options of that criterion (``grading.option_agreement.options_alpha``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import case, exists, func, select
from sqlalchemy.orm import Session

from grading.agreement import alpha_from_counts
from grading.agreement_kinds import alpha_by_criterion
from grading.option_agreement import OptionScale, options_alpha
from grading.types import Verdict
from storage import models as m
from storage.convert import criterion_info
from storage.dto import CriterionInfo
from storage.engine import SessionFactory
from storage.repositories import rubrics as rubric_repo
from storage.services.member_units import member_units
from storage.services.panels import (
    LOW_MEMBER_AGREEMENT,
    get_panel,
    panel_grades,
    require_ready,
)


@dataclass(frozen=True)
class MemberAgreement:
    """Agreement among a panel's members on one criterion (Krippendorff's alpha: nominal on
    MET/UNMET, on the options' values or categories for a multi-choice criterion)."""

    criterion_id: int
    label: str
    alpha: float | None
    units: int
    low: bool
    note: str


def member_agreement(sessions: SessionFactory, panel_id: int) -> list[MemberAgreement]:
    """Per criterion, how far the members agree with each other; low agreement flagged."""
    panel = get_panel(sessions, panel_id)
    members = [member.run.id for member in panel.members]
    with sessions() as session:
        require_ready(session, panel_id)
        if not session.scalar(select(exists().where(m.GradeRow.run_id.in_(members)))):
            return []
        criteria = [criterion_info(c) for c in
                    rubric_repo.criteria_of(session, panel.rubric_version_id)]
        kinds = {c.id: OptionScale.of(c) for c in criteria}
        binary = _binary_alphas(session, members, [c.id for c in criteria],
                                [c.id for c in criteria if kinds[c.id] is None])
        out = []
        for criterion in criteria:
            scale = kinds[criterion.id]
            result = (binary[criterion.id] if scale is None
                      else _option_alpha(session, members, criterion, scale))
            out.append(MemberAgreement(
                criterion_id=criterion.id, label=criterion.label, alpha=result.alpha,
                units=result.pairable_units,
                low=result.alpha is not None and result.alpha < LOW_MEMBER_AGREEMENT,
                note=result.note))
    return out


def units_query(members: list[int]):
    """Per (criterion, response) some member answered: its MET, UNMET and CANNOT_ASSESS
    answers and the first member (panel order) that answered it."""
    gc, g = m.GradeCriterionRow, m.GradeRow
    position = case({run_id: i for i, run_id in enumerate(members)}, value=g.run_id)

    def count(verdict: Verdict):
        return func.sum(case((gc.verdict == verdict.value, 1), else_=0))

    return (select(gc.criterion_id.label("criterion_id"), g.response_id.label("response_id"),
                   count(Verdict.MET).label("met"), count(Verdict.UNMET).label("unmet"),
                   count(Verdict.CANNOT_ASSESS).label("ca"),
                   func.min(position).label("first"))
            .join(g, g.id == gc.grade_id)
            .where(g.run_id.in_(members), gc.verdict.is_not(None))
            .group_by(gc.criterion_id, g.response_id))


def _binary_alphas(session: Session, members: list[int], criteria: list[int],
                   binary: list[int]) -> dict:
    if not binary:
        return {}
    found = member_units(session, members, criteria, binary, units_query)
    return {criterion_id: alpha_from_counts(
        sources=len(members), units=units.units, pairable_units=units.pairable,
        values_used=units.values, met=units.met, excluded_cannot_assess=units.ca,
        disagreeing=units.disagreeing) for criterion_id, units in found.items()}


def _option_alpha(session: Session, members: list[int], criterion: CriterionInfo,
                  scale: OptionScale):
    """The members' options of one criterion, as the panel's grades listed them."""
    gc, g = m.GradeCriterionRow, m.GradeRow
    sources: list[dict] = [{} for _ in members]
    at = {run_id: i for i, run_id in enumerate(members)}
    for run_id, response_id, verdict, option in session.execute(
            select(g.run_id, g.response_id, gc.verdict, gc.option)
            .join(g, g.id == gc.grade_id)
            .where(g.run_id.in_(members), gc.criterion_id == criterion.id,
                   gc.verdict.is_not(None) | gc.option.is_not(None))
            .order_by(g.response_id)):
        sources[at[run_id]][response_id, criterion.id] = (
            option if option is not None else Verdict(verdict))
    return options_alpha(sources, scale)


def recounted_agreement(sessions: SessionFactory, panel_id: int) -> list[MemberAgreement]:
    """``member_agreement`` as it was computed before the counts: from every panel grade's
    members' verdicts (tests and the benchmark compare the two)."""
    grades = panel_grades(sessions, panel_id)
    if not grades:
        return []
    members = len(grades[0].criteria[0].member_verdicts) if grades[0].criteria else 0
    sources = [
        {(g.response_id, row.criterion_id): row.member_verdicts[i]
         for g in grades for row in g.criteria}
        for i in range(members)
    ]
    labels = {row.criterion_id: row.label for row in grades[0].criteria}
    panel = get_panel(sessions, panel_id)
    with sessions() as session:
        criteria = [criterion_info(c) for c in
                    rubric_repo.criteria_of(session, panel.rubric_version_id)]
    kinds = {c.id: OptionScale.of(c) for c in criteria}
    by_criterion = alpha_by_criterion(sources, kinds).per_criterion
    out = []
    for criterion_id, label in labels.items():
        result = by_criterion.get(criterion_id)
        alpha = None if result is None else result.alpha
        units = 0 if result is None else result.pairable_units
        out.append(MemberAgreement(
            criterion_id=criterion_id, label=label, alpha=alpha, units=units,
            low=alpha is not None and alpha < LOW_MEMBER_AGREEMENT,
            note="" if result is None else result.note,
        ))
    return out
