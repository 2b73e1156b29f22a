"""The per-criterion reports graders build from answers: judged, chosen option, fallback."""

from __future__ import annotations

from typing import Any

from grading.option_prompts import option_order
from grading.options import MultiChoiceVerdict
from grading.types import Criterion, CriterionReport, ToGradeInput, Verdict

CRITERION_FIELDS = frozenset(Criterion.model_fields)


def option_order_for(grader: Any, criterion: Criterion,
                     to_grade: ToGradeInput) -> tuple[int, ...]:
    """The order this grader shows a criterion's options in, for this response."""
    return option_order(criterion, shuffle=grader.shuffle_options, seed=grader.seed,
                        salt=repr(to_grade))


def answered_report(criterion: Criterion, answer: Verdict | int, reason: str,
                    order: tuple[int, ...] | None = None, *,
                    shuffled: bool = False) -> CriterionReport:
    """A judged criterion: a binary verdict, or the original index of the chosen option.
    ``shuffled``: the options were shown in ``order``, drawn at random for this response; it
    is recorded even when the draw kept the rubric's order (one in n! draws), so that the
    position effect counts every shuffled choice, not only those whose order changed."""
    if criterion.options is None or isinstance(answer, Verdict):
        assert isinstance(answer, Verdict)
        return judged_report(criterion, answer, reason)
    option = criterion.options[answer]
    return CriterionReport(
        **{name: getattr(criterion, name) for name in CRITERION_FIELDS},
        multi_choice_verdict=MultiChoiceVerdict(selected_index=answer,
                                                selected_label=option.label,
                                                value=option.value, na=option.na),
        reason=reason, shuffle_order=tuple(order) if shuffled and order is not None else None)


def fallback_report(criterion: Criterion, verdict: Verdict, why: str) -> CriterionReport:
    """A synthesised verdict. A multi-choice criterion abstains instead (no option named),
    scored by the CANNOT_ASSESS strategy: MET/UNMET name no option."""
    fields: dict[str, Any] = {name: getattr(criterion, name) for name in CRITERION_FIELDS}
    if criterion.options is not None:
        return CriterionReport(
            **fields, multi_choice_verdict=MultiChoiceVerdict(value=0.0, na=True), reason="",
            error=f"fallback: abstained (the judge gave no usable answer: {why})")
    return CriterionReport(
        **fields,
        verdict=verdict,
        reason="",
        error=f"fallback verdict {verdict.value} (the judge gave no usable answer: {why})",
    )


def judged_report(criterion: Criterion, verdict: Verdict | None, reason: str = "",
                  error: str | None = None) -> CriterionReport:
    return CriterionReport(
        **{name: getattr(criterion, name) for name in CRITERION_FIELDS},
        verdict=verdict,
        reason=reason,
        error=error,
    )
