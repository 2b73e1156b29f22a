"""How far a panel's members agree with each other, per criterion (Krippendorff's alpha on
the panel's grades as storage.services.panels combines them)."""

from __future__ import annotations

from dataclasses import dataclass

from grading.agreement_kinds import alpha_by_criterion
from grading.option_agreement import OptionScale
from storage.convert import criterion_info
from storage.engine import SessionFactory
from storage.repositories import rubrics as rubric_repo
from storage.services.panels import LOW_MEMBER_AGREEMENT, get_panel, panel_grades


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
    # ratings on their options (ordinal or nominal alpha), MET/UNMET criteria as before
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
