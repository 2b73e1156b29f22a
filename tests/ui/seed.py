"""Seed graded data through the storage services (the pages read it back)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grading.types import ScoringSettings, Verdict
from storage.config import database_url
from storage.dto import ResponseInfo, RubricVersionInfo, RunInfo
from storage.engine import SessionFactory, open_database
from storage.services import datasets, runs
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, judge_report, make_rubric

APP = str(Path(__file__).resolve().parents[2] / "ui" / "app.py")
M, U = Verdict.MET, Verdict.UNMET


@dataclass
class Seeded:
    sessions: SessionFactory
    version: RubricVersionInfo
    responses: list[ResponseInfo]
    runs: list[RunInfo]


def seed_graded(count: int = 3, *, grade: bool = True,
                references: dict[int, str] | None = None) -> Seeded:
    """Two runs over ``count`` responses. r0: both judges agree; r1: they disagree on
    'cites'; r2: the second judge failed on 'concise'; the rest agree. ``references``:
    response index -> its reference answer."""
    sessions = open_database(database_url())
    version = make_rubric(sessions)
    rows = [{"id": f"r{i}", "query": f"question {i}", "text": f"answer {i}"}
            | ({"reference": references[i]} if i in (references or {}) else {})
            for i in range(count)]
    dataset = datasets.create_dataset(sessions, "Answers", responses=rows, actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    created = [
        runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                        grader=grader, model=model, actor=ADMIN)
        for grader, model in (("per_criterion", "openai/judge-a"),
                              ("one_shot", "openai/judge-b"))
    ]
    if grade:
        for index, response in enumerate(responses):
            first = [M, M, M, U]
            second = {1: [M, U, M, U], 2: [M, M, None, U]}.get(index, [M, M, M, U])
            for run, verdicts in zip(created, (first, second), strict=True):
                report = judge_report(CRITERIA, verdicts, ScoringSettings(), response.output)
                runs.record_grade(sessions, run.id, response.id, report)
    return Seeded(sessions, version, responses, [runs.get_run(sessions, r.id) for r in created])
