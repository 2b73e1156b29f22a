"""A small world for the agreement and label tests: two judges, one holistic run, reviewers.

Seeded only through storage services, with reports made by grading's own aggregation. Shared by
the storage tests, the AppTest of the Agreement page and the browser screenshot.
"""

from __future__ import annotations

from dataclasses import dataclass

from grading.types import EvaluationReport, ScoringSettings, TokenUsage, Verdict
from storage.dto import DatasetInfo, ResponseInfo, RubricVersionInfo, RunInfo
from storage.services import datasets, reviews, rubrics, runs
from storage.services.reviewers import local_actor
from storage.services.sign_in import SignInClaims, sign_in
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, holistic_report, judge_report

M, U, C = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS

# Verdicts per response, in CRITERIA order (accurate, cites, concise, harmful).
CHEAP = {
    "r0": [M, M, M, U], "r1": [M, U, M, U], "r2": [U, U, M, M], "r3": [M, M, U, U],
    "r4": [M, U, M, U], "r5": [U, M, M, U],
}
STRONG = {
    "r0": [M, M, M, U], "r1": [M, U, U, U], "r2": [U, U, M, M], "r3": [M, U, U, U],
    "r4": [M, U, M, U], "r5": [U, U, C, U],
}
# Reviewed responses; r0-r3 fully, r4 on two criteria, r5 not at all.
HUMAN = {
    "r0": [M, M, M, U], "r1": [M, U, U, U], "r2": [U, U, M, U], "r3": [M, U, U, U],
    "r4": [M, M, None, None],
}
# The team's other reviewers: known (they signed in once), no verdicts yet.
TEAM = ("bo", "cy", "dee")
HOLISTIC = {"r0": 90.0, "r1": 60.0, "r2": 20.0, "r3": 55.0, "r4": 70.0, "r5": 40.0}


@dataclass(frozen=True)
class Seeded:
    version: RubricVersionInfo
    dataset: DatasetInfo
    responses: dict[str, ResponseInfo]
    cheap: RunInfo
    strong: RunInfo
    holistic: RunInfo


def _with_usage(report: EvaluationReport, tokens: int, cost: float | None) -> EvaluationReport:
    return report.model_copy(update={
        "token_usage": TokenUsage(prompt_tokens=tokens - 20, completion_tokens=20,
                                  total_tokens=tokens),
        "completion_cost": cost,
    })


def seed(sessions, *, rubric_name: str = "Dosing", dataset_name: str = "Answers") -> Seeded:
    version = rubrics.create_rubric(sessions, rubric_name, CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, dataset_name, responses=[
        {"id": key, "query": f"What is the dose for case {key}?",
         "text": f"Answer {key}: take 5 mg twice a day."} for key in CHEAP], actor=ADMIN)
    responses = {r.external_id: r for r in datasets.list_responses(sessions, dataset.id)}
    settings = ScoringSettings()
    made = {}
    for name, grader, model in (("cheap", "per_criterion", "openai/mini-judge"),
                                ("strong", "one_shot", "openai/big-judge"),
                                ("holistic", "rubric_as_judge", "openai/mini-judge")):
        made[name] = runs.create_run(sessions, rubric_version_id=version.id,
                                     dataset_id=dataset.id, grader=grader, model=model, actor=ADMIN)
    for key, response in responses.items():
        text = response.output
        runs.record_grade(sessions, made["cheap"].id, response.id, _with_usage(
            judge_report(CRITERIA, CHEAP[key], settings, text), 400, 0.0004))
        runs.record_grade(sessions, made["strong"].id, response.id, _with_usage(
            judge_report(CRITERIA, STRONG[key], settings, text), 900, 0.0090))
        runs.record_grade(sessions, made["holistic"].id, response.id, _with_usage(
            holistic_report(CRITERIA, HOLISTIC[key], settings, text), 300, None))
    for run in made.values():
        runs.start_run(sessions, run.id, worker="seed")
        runs.finish_run(sessions, run.id)
    for key, verdicts in HUMAN.items():
        for criterion, verdict in zip(version.criteria, verdicts, strict=True):
            if verdict is not None:
                reviews.set_human_verdict(
                    sessions, response_id=responses[key].id, criterion_id=criterion.id,
                    verdict=verdict, actor=local_actor("ana"), note=f"checked {key}")
    for who in TEAM:  # verdict sheets may name them (storage/services/reviewer_names.py)
        sign_in(sessions, SignInClaims(issuer="http://idp.test", subject=who, email=who,
                                       email_verified=True))
    return Seeded(version=version, dataset=dataset, responses=responses,
                  cheap=runs.get_run(sessions, made["cheap"].id),
                  strong=runs.get_run(sessions, made["strong"].id),
                  holistic=runs.get_run(sessions, made["holistic"].id))
