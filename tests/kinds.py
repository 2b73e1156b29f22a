"""A rubric mixing the three kinds of criterion, and judge reports on it, for the tests of
rating and category criteria (storage, AppTest and browser tests seed the same data)."""

from __future__ import annotations

from collections.abc import Sequence

from grading.options import CriterionOption as O
from grading.options import MultiChoiceVerdict
from grading.rubric import Rubric
from grading.types import Criterion, CriterionReport, EvaluationReport, Verdict

LIKERT = tuple(O(label=label, value=v) for label, v in
               [("Poor", 0.0), ("Fair", 0.25), ("Good", 0.5), ("Very good", 0.75),
                ("Excellent", 1.0)])
MIXED = [
    Criterion(name="accurate", requirement="States the dose correctly", weight=10),
    Criterion(name="clarity", requirement="How clear is it?", weight=5, options=LIKERT),
    Criterion(name="tone", requirement="Which tone?", weight=2, scale_type="nominal",
              options=(O(label="formal", value=1.0), O(label="casual", value=0.5),
                       O(label="no text", value=0.0, na=True))),
]


def judge_report(choices: Sequence[str], criteria: Sequence[Criterion] = MIXED, *,
                 reason: str = "", score: float | None = None) -> EvaluationReport:
    """A judge's report choosing ``choices`` (a verdict or an option label per criterion);
    its score is the one aggregation function's unless ``score`` is given."""
    reports = []
    for criterion, choice in zip(criteria, choices, strict=True):
        if criterion.options is None:
            reports.append(CriterionReport(**criterion.model_dump(), verdict=Verdict(choice),
                                           reason=reason))
            continue
        index = criterion.find_option_by_label(choice)
        option = criterion.options[index]
        reports.append(CriterionReport(**criterion.model_dump(), reason=reason,
                                       multi_choice_verdict=MultiChoiceVerdict(
                                           selected_index=index, selected_label=option.label,
                                           value=option.value, na=option.na)))
    if score is None:
        score = Rubric(list(criteria)).compute_score(list(choices))
    return EvaluationReport(score=score, report=reports)
