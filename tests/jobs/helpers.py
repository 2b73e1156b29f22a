"""Builders for jobs tests: rubrics, datasets and runs pointed at the fake provider."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import select

from grading.types import Criterion
from storage import models as m
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


def assert_each_response_asked(bodies: list[dict], count: int, times: int = 1) -> None:
    """``count`` responses were asked about, each ``times`` (once per criterion): none
    graded twice by two processes, none skipped."""
    per_response = answers_per_response(bodies)
    assert len(per_response) == count, (len(per_response), count)
    assert set(per_response.values()) == {times}, Counter(per_response.values())


def dumps(value: Any) -> str:
    return json.dumps(value)


def write_grade_inputs(tmp_path: Path, count: int) -> list[str]:
    """A one-criterion rubric and ``count`` responses written to ``tmp_path``; the ``grade``
    arguments that read them (without the provider and the database)."""
    (tmp_path / "rubric.yaml").write_text(
        "- name: accurate\n  requirement: States the dose correctly\n  weight: 10\n")
    (tmp_path / "r.csv").write_text(
        "id,query,text\n" + "".join(f"r{i},question {i},answer number {i}\n"
                                    for i in range(count)))
    return ["grade", "--rubric", str(tmp_path / "rubric.yaml"), "--responses",
            str(tmp_path / "r.csv"), "--grader", "per-criterion", "--model", MODEL,
            "--no-cache"]


def standby_helpers(db_url: str) -> list[str]:
    """The command lines of processes still running as standby helpers on this database."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "--standby" in command and db_url in command:
            found.append(command)
    return found


def chunk_holders(sessions, run_id: int | None = None) -> Counter:
    """The chunks of a run (the first one when ``run_id`` is None) per worker that claimed
    them."""
    with sessions() as session:
        if run_id is None:
            run_id = session.scalar(select(m.RunChunkRow.run_id).order_by(m.RunChunkRow.run_id))
        return Counter(session.scalars(select(m.RunChunkRow.claimed_by).where(
            m.RunChunkRow.run_id == run_id)).all())


def in_thread(target, *args, **kwargs):
    """Run ``target`` in a daemon thread; its result or exception lands in the box."""
    box: dict = {}

    def main():
        try:
            box["result"] = target(*args, **kwargs)
        except BaseException as exc:  # surfaced by the test
            box["error"] = exc

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    return thread, box


def asked_about(body: dict) -> tuple[str, str]:
    """(response, criterion requirement) a per-criterion request asks about (the responses
    of ``make_dataset`` read "answer number i")."""
    prompt = body["messages"][-1]["content"]
    response = prompt[prompt.index("answer number "):].split("\n", 1)[0]
    requirement = next(c.requirement for c in CRITERIA if c.requirement in prompt)
    return response, requirement


def sampled_judge(verdict_of):
    """A fake judge answering the k-th request about (response, requirement) with
    ``verdict_of((response, requirement), k)``: the samples of each criterion are fixed
    whatever order the concurrent calls arrive in."""
    lock = threading.Lock()
    seen: Counter[tuple[str, str]] = Counter()

    def reply(body: dict) -> str:
        key = asked_about(body)
        with lock:
            k = seen[key]
            seen[key] += 1
        return json.dumps({"verdict": verdict_of(key, k), "reason": f"sample says {k}"})

    return reply


def cli_command(*args: str) -> list[str]:
    """``rubric-workbench ARGS`` as a separate process of this Python (to kill it, say)."""
    import sys

    return [sys.executable, "-c", "import sys; from storage.cli import main; "
            "sys.exit(main(sys.argv[1:]))", *args]


def grade_by_cli(directory: Path, fake: Any, *extra: str, rubric: str, responses: str,
                 db_url: str | None = None, grader: str = "per-criterion") -> int:
    """`rubric-workbench grade` on a rubric file and a responses CSV written to ``directory``,
    judged by the fake provider; the database is ``db_url`` or a SQLite file there."""
    from storage import cli

    (directory / "rubric.yaml").write_text(rubric)
    (directory / "r.csv").write_text(responses)
    return cli.main(["grade", "--rubric", str(directory / "rubric.yaml"), "--responses",
                     str(directory / "r.csv"), "--grader", grader, "--model", MODEL,
                     "--api-base", fake.api_base, "--db",
                     db_url or f"sqlite:///{directory / 'cli.db'}", *extra])
