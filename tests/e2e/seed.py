"""One rubric, one dataset and one finished judge run, written straight to a database: what
the review journeys start from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grading.types import Criterion, ScoringSettings, Verdict
from storage.engine import SessionFactory
from storage.services import datasets, rubrics, runs
from tests.actors import ADMIN
from tests.storage.helpers import judge_report


@dataclass(frozen=True)
class ReviewSet:
    version: object
    dataset: object
    run: object
    responses: list


def judged_set(sessions: SessionFactory, criteria: Sequence[Criterion], count: int, *,
               rubric: str = "Dosing", verdicts: Sequence[Verdict] | None = None) -> ReviewSet:
    """``count`` responses ``q0``.. graded by one finished per-criterion run whose judge gives
    ``verdicts`` (MET on every criterion by default) to each."""
    version = rubrics.create_rubric(sessions, rubric, list(criteria), actor=ADMIN)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"q{i}", "query": f"question {i}", "text": f"answer {i}"} for i in range(count)],
        actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/judge", actor=ADMIN)
    given = list(verdicts or [Verdict.MET] * len(criteria))
    for response in responses:
        runs.record_grade(sessions, run.id, response.id, judge_report(
            list(criteria), given, ScoringSettings(), response.output))
    runs.start_run(sessions, run.id, worker="seed")
    runs.finish_run(sessions, run.id)
    return ReviewSet(version=version, dataset=dataset, run=run, responses=responses)
