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



# Two judges and two reviewers on eight responses of MIXED, for the human-baseline grid: the
# reviewers answer 'accurate' and 'clarity' everywhere, 'tone' together on two responses only
# (too few for a baseline). Per response: accurate, clarity, tone (None: not answered).
M, U = "MET", "UNMET"
GRID_JUDGES = {
    "openai/judge-a": [(M, "Good", "formal"), (M, "Fair", "casual"), (U, "Poor", "formal"),
                       (M, "Excellent", "casual"), (U, "Fair", "formal"),
                       (M, "Good", "formal"), (M, "Very good", "casual"),
                       (U, "Poor", "casual")],
    "openai/judge-b": [(M, "Excellent", "formal"), (U, "Poor", "formal"),
                       (U, "Fair", "casual"), (M, "Good", "casual"),
                       (M, "Excellent", "formal"), (U, "Fair", "casual"),
                       (M, "Poor", "formal"), (M, "Good", "casual")],
}
GRID_PEOPLE = {
    "ana": [(M, "Good", "formal"), (M, "Fair", "casual"), (U, "Poor", "formal"),
            (M, "Excellent", "casual"), (U, "Fair", "formal"), (M, "Good", "formal"),
            (M, "Very good", "casual"), (U, "Poor", "casual")],
    "bo": [(M, "Good", "formal"), (U, "Fair", "casual"), (U, "Fair", None),
           (M, "Very good", None), (U, "Fair", None), (M, "Good", None),
           (M, "Good", None), (U, "Poor", None)],
}


def seed_grid(sessions):
    """The grid's world, through the services only: returns the rubric version."""
    from storage.services import datasets, reviews, rubrics, runs
    from storage.services.reviewers import local_actor
    from tests.actors import ADMIN

    version = rubrics.create_rubric(sessions, "Mixed", MIXED, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "query": f"question {i}", "text": f"answer {i}"} for i in range(8)],
        actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    for model, rows in GRID_JUDGES.items():
        run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                              grader="per_criterion", model=model, actor=ADMIN)
        for response, choices in zip(responses, rows, strict=True):
            runs.record_grade(sessions, run.id, response.id, judge_report(choices))
        runs.start_run(sessions, run.id, worker="seed")
        runs.finish_run(sessions, run.id)
    for who, rows in GRID_PEOPLE.items():
        for response, choices in zip(responses, rows, strict=True):
            for criterion, choice in zip(version.criteria, choices, strict=True):
                if choice is not None:
                    reviews.set_human_verdict(sessions, actor=local_actor(who),
                                              response_id=response.id,
                                              criterion_id=criterion.id, verdict=choice)
    return version
