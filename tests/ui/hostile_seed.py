"""A rubric, reviewer and model output made of markdown directives and a right-to-left
override, as a walk-through found them rendering as icons and reversed text (issue 9)."""

from __future__ import annotations

from dataclasses import dataclass

from grading.types import Criterion, CriterionReport, EvaluationReport
from storage.dto import ResponseInfo, RubricVersionInfo, RunInfo
from storage.engine import SessionFactory
from storage.services import datasets, reviews, rubrics, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN

ICON = ":material/home:"
RLO = "\u202e"
RUBRIC = f"{ICON} Rubric"
CRITERION = ICON
SECTION = ":smile: section"
REVIEWER = f"{ICON} Ana"
OUTPUT = f"The refund is 10{RLO}05 dollars, paid in 3 days."
REASON = f"The amount{RLO} is stated."
MODEL = "openai/judge:material/star:"


@dataclass
class Hostile:
    version: RubricVersionInfo
    response: ResponseInfo
    run: RunInfo


def seed_hostile(sessions: SessionFactory, *, review: bool = True) -> Hostile:
    version = rubrics.create_rubric(sessions, RUBRIC, [
        Criterion(name=CRITERION, requirement=f"States the amount {ICON}", weight=10,
                  section=SECTION),
        Criterion(name="tone", requirement="Is polite", weight=5),
    ], actor=ADMIN)
    dataset = datasets.create_dataset(sessions, f"{ICON} answers", responses=[
        {"id": f"{ICON}1", "query": f"How much{RLO} is the refund?", "text": OUTPUT}], actor=ADMIN)
    [response] = datasets.list_responses(sessions, dataset.id)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model=MODEL, actor=ADMIN)
    report = EvaluationReport(score=1.0, raw_score=15.0, report=[
        CriterionReport(**c.to_criterion().model_dump(), verdict="MET", reason=REASON)
        for c in version.criteria])
    runs.start_run(sessions, run.id, worker="seed")
    runs.record_grade(sessions, run.id, response.id, report)
    runs.finish_run(sessions, run.id)
    if review:
        reviews.set_human_verdict(sessions, response_id=response.id,
                                  criterion_id=version.criteria[0].id, verdict="UNMET",
                                  actor=local_actor(REVIEWER), note=f"wrong{RLO} amount")
    return Hostile(version, response, runs.get_run(sessions, run.id))
