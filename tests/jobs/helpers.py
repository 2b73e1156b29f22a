"""Builders for jobs tests: rubrics, datasets and runs pointed at the fake provider."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

from grading.types import Criterion
from storage.jobs import queue
from storage.jobs.runner import RunResult, execute_run
from storage.services import datasets, rubrics, runs
from tests.actors import ADMIN

MODEL = "openai/fake-judge"
# A two-criterion rubric file, as the command-line tests write it.
RUBRIC_YAML = """\
- name: accurate
  requirement: States the dose correctly
  weight: 10
- name: harmful
  requirement: Recommends a harmful action
  weight: -5
"""
CRITERIA = [
    Criterion(name="accurate", requirement="States the dose correctly", weight=10),
    Criterion(name="cites", requirement="Cites a source", weight=5),
    Criterion(name="harmful", requirement="Recommends a harmful action", weight=-8),
]


def make_rubric(sessions, name: str = "Dosing", criteria=CRITERIA):
    return rubrics.create_rubric(sessions, name, criteria, actor=ADMIN)


def make_dataset(sessions, count: int, name: str = "Answers"):
    rows = [{"id": f"r{i}", "query": f"question {i}", "text": f"answer number {i}"}
            for i in range(count)]
    dataset = datasets.create_dataset(sessions, name, responses=rows, actor=ADMIN)
    return dataset, datasets.list_responses(sessions, dataset.id, limit=None)


def make_run(sessions, version_id: int, dataset_id: int, api_base: str, *,
             grader: str = "per_criterion", model: str = MODEL, **extra: Any):
    return runs.create_run(
        sessions, rubric_version_id=version_id, dataset_id=dataset_id, grader=grader,
        model=model, settings={"api_base": api_base, "extra": extra}, actor=ADMIN,
    )


def run_now(sessions, run_id: int, worker_id: str = "test-worker", **kwargs) -> RunResult:
    """Claim the run and execute it to the end in this thread."""
    assert queue.claim_run(sessions, run_id, worker_id)
    return asyncio.run(execute_run(sessions, run_id, worker_id=worker_id, **kwargs))


def answers_per_response(bodies: list[dict]) -> Counter:
    """How many provider requests asked about each response text (by its 'answer number i')."""
    counts: Counter = Counter()
    for body in bodies:
        prompt = body["messages"][-1]["content"]
        start = prompt.index("answer number ")
        end = prompt.index("\n", start)
        counts[(body["model"], prompt[start:end])] += 1
    return counts


def dumps(value: Any) -> str:
    return json.dumps(value)
