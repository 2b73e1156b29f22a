"""Workers: the in-process worker, two workers sharing PostgreSQL, cancel, and a real worker
process killed mid-run and restarted."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from storage import models as m
from storage.jobs import Worker, run_progress, start_in_process_worker, stop_in_process_workers
from storage.services import runs
from tests.actors import ADMIN
from tests.fake_provider import is_probe
from tests.jobs.conftest import API_KEY
from tests.jobs.helpers import answers_per_response, make_dataset, make_rubric, make_run

ROOT = Path(__file__).resolve().parents[2]


def _wait_for(condition, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_in_process_worker_is_started_once_and_executes_queued_runs(db_url, fake_provider):
    try:
        handle = start_in_process_worker(db_url, poll_interval=0.1)
        assert start_in_process_worker(db_url) is handle and handle.alive
        sessions = handle.worker.sessions
        version = make_rubric(sessions)
        dataset, _ = make_dataset(sessions, 3)
        run = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
        _wait_for(lambda: runs.get_run(sessions, run.id).status == "done", what="the run")
        assert run_progress(sessions, run.id).done == 3
        assert runs.get_run(sessions, run.id).claimed_by == handle.worker_id
    finally:
        stop_in_process_workers()
    assert not handle.alive


def test_cancelling_a_run_stops_it_and_a_requeue_grades_only_the_rest(sessions, fake_provider):
    fake_provider.latency = 0.1
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 30)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, concurrency=3)
    worker = Worker(sessions, poll_interval=0.05, lease_seconds=0.8)

    async def cancel_midway() -> None:
        stop = asyncio.Event()
        serving = asyncio.create_task(worker.run(stop))
        while run_progress(sessions, run.id).graded < 3:
            await asyncio.sleep(0.05)
        runs.cancel_run(sessions, run.id, actor=ADMIN)
        while not worker.results:  # the worker notices at its next heartbeat
            await asyncio.sleep(0.05)
        stop.set()
        await serving

    asyncio.run(cancel_midway())
    [result] = worker.results
    assert result.status == "cancelled"
    graded = {g.response_id for g in runs.list_grades(sessions, run.id)}
    assert 3 <= len(graded) < 30 and runs.get_run(sessions, run.id).status == "cancelled"
    calls_before = fake_provider.requests

    runs.requeue_run(sessions, run.id, actor=ADMIN)
    fake_provider.latency = 0.0
    asyncio.run(Worker(sessions, poll_interval=0.05).run(asyncio.Event(), until_idle=True))

    assert runs.get_run(sessions, run.id).status == "done"
    grades = runs.list_grades(sessions, run.id)
    assert len(grades) == 30
    # Graded responses were not asked about again (their answers may be cached, too).
    new_bodies = fake_provider.bodies[calls_before:]
    # The calls the cancel cut off may still run at the server: one probe first, at most.
    asked = [b for b in new_bodies if not is_probe(b)]
    assert len(new_bodies) - len(asked) <= 1
    texts_done = {f"answer number {r.external_id[1:]}" for r in _responses(sessions, graded)}
    assert not [b for b in asked if _text_of(b) in texts_done]


def test_a_live_worker_whose_heartbeat_lapsed_does_not_take_its_own_run_again(
        sessions, fake_provider):
    """A stall longer than the lease (a slow machine, a laptop lid, a busy database) leaves
    the run looking abandoned; the worker still executing it must not claim it a second time
    (both copies would renew the same claim and grade every response twice)."""
    fake_provider.latency = 0.05
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 12)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, concurrency=1)
    lease = 20.0
    worker = Worker(sessions, poll_interval=0.02, lease_seconds=lease)  # heartbeat every 5 s
    stalled_at: list = []

    async def stall_then_finish() -> None:
        serving = asyncio.create_task(worker.run(asyncio.Event(), until_idle=True))
        while run_progress(sessions, run.id).graded < 1:
            await asyncio.sleep(0.02)
        # What a stall leaves in the database: the last heartbeat is older than the lease.
        with sessions.begin() as session:
            stalled_at.append(m.utcnow() - timedelta(seconds=2 * lease))
            session.execute(update(m.RunRow).where(m.RunRow.id == run.id)
                            .values(heartbeat_at=stalled_at[0]))
        await serving

    asyncio.run(stall_then_finish())
    assert [(r.run_id, r.status) for r in worker.results] == [(run.id, "done")]
    per_response = answers_per_response(fake_provider.bodies)
    assert len(per_response) == 12 and set(per_response.values()) == {3}  # 3 criteria each


def _responses(sessions, ids):
    from storage.services import datasets

    return datasets.get_responses(sessions, sorted(ids))


def _text_of(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    start = prompt.index("answer number ")
    return prompt[start:prompt.index("\n", start)]


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_two_workers_on_postgresql_never_grade_the_same_response_twice(
        sessions, backend, fake_provider):
    fake_provider.latency = 0.02
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 8)
    run_ids = [make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                        model=f"openai/judge-{i}").id for i in range(6)]
    workers = [Worker(sessions, worker_id=f"w{i}", max_runs=1, poll_interval=0.05)
               for i in range(2)]

    async def both() -> None:
        await asyncio.gather(*(w.run(asyncio.Event(), until_idle=True) for w in workers))

    asyncio.run(both())

    assert [runs.get_run(sessions, r).status for r in run_ids] == ["done"] * 6
    per_response = answers_per_response(fake_provider.bodies)
    assert len(per_response) == 6 * 8 and set(per_response.values()) == {3}  # 3 criteria each
    holders = Counter(runs.get_run(sessions, r).claimed_by for r in run_ids)
    assert set(holders) == {"w0", "w1"}  # both took part
    # A worker between runs may help with the other's run (its chunks): a result of its own
    # for that run, with what it graded. Summed, every response is counted once.
    results = [r for w in workers for r in w.results]
    assert {r.run_id for r in results} == set(run_ids)
    assert sum(r.graded for r in results) == 6 * 8 and not any(r.failed for r in results)


def _worker_process(db_url: str, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "RUBRIC_WORKBENCH_API_KEY": API_KEY, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "storage.cli", "worker", "--db", db_url, "--lease", "1.5",
         "--poll", "0.1", *extra],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


# SQLite: the default, where an app restart is the common kill. Taking over a stale run on
# PostgreSQL is covered in test_queue (and each worker process costs ~10 s of litellm import).
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_killed_worker_process_is_resumed_without_repeating_finished_work(
        db_url, sessions, backend, fake_provider):
    fake_provider.latency = 0.15
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 24)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, concurrency=3)

    first = _worker_process(db_url)
    try:
        _wait_for(lambda: run_progress(sessions, run.id).graded >= 4, 90, "first grades")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    killed_at = fake_provider.requests
    finished = {g.response_id for g in runs.list_grades(sessions, run.id)}
    assert 4 <= len(finished) < 24
    assert runs.get_run(sessions, run.id).status == "running"  # nobody said otherwise

    second = _worker_process(db_url, "--until-idle")
    try:
        _, stderr = second.communicate(timeout=120)
    finally:
        second.kill()
    assert second.returncode == 0, stderr[-2000:]
    assert "run only one worker on it" in stderr  # SQLite: the worker says so

    assert runs.get_run(sessions, run.id).status == "done"
    grades = runs.list_grades(sessions, run.id)
    assert len(grades) == 24 and all(g.score is not None for g in grades)
    done_texts = {f"answer number {r.external_id[1:]}" for r in _responses(sessions, finished)}
    repeated = [b for b in fake_provider.bodies[killed_at:] if _text_of(b) in done_texts]
    assert repeated == []
    # Every response still pending at the kill was asked about after the restart.
    resumed = {_text_of(b) for b in fake_provider.bodies[killed_at:]}
    pending = {f"answer number {i}" for i in range(24)} - done_texts
    assert pending <= resumed | {_text_of(b) for b in fake_provider.bodies[:killed_at]}


def test_a_stopped_worker_hands_its_run_back_to_the_queue(sessions, fake_provider):
    fake_provider.latency = 0.1
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 20)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, concurrency=3)
    worker = Worker(sessions, poll_interval=0.05)

    async def stop_midway() -> None:
        stop = asyncio.Event()
        serving = asyncio.create_task(worker.run(stop))
        while run_progress(sessions, run.id).graded < 2:
            await asyncio.sleep(0.05)
        stop.set()
        await serving

    asyncio.run(stop_midway())
    assert [r.status for r in worker.results] == ["queued"]
    stored = runs.get_run(sessions, run.id)
    assert (stored.status, stored.claimed_by) == ("queued", None)
    assert 2 <= stored.graded_count < 20


def test_a_stopped_in_process_worker_leaves_no_task_pending_on_its_closed_loop(
        db_url, fake_provider, caplog):
    """litellm starts a logging task on each event loop it calls from. Closed without
    cancelling it, the task was destroyed later at whatever moment the garbage collector ran —
    logging "Task was destroyed but it is pending!" from inside unrelated code (once inside a
    Streamlit script's compile, which then failed on Python 3.11)."""
    import gc

    try:
        handle = start_in_process_worker(db_url, poll_interval=0.1)
        sessions = handle.worker.sessions
        version = make_rubric(sessions)
        dataset, _ = make_dataset(sessions, 2)
        run = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
        _wait_for(lambda: runs.get_run(sessions, run.id).status == "done", what="the run")
    finally:
        stop_in_process_workers()
    assert not handle.alive
    assert [t for t in asyncio.all_tasks(handle._loop) if not t.done()] == []
    with caplog.at_level("ERROR", logger="asyncio"):
        gc.collect()
    assert "Task was destroyed but it is pending" not in caplog.text


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_worker_for_one_queued_run_starts_it_and_exits_once_it_is_done(
        db_url, sessions, backend, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 4)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    other = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    assert runs.get_run(sessions, run.id).status == "queued"

    worker = _worker_process(db_url, "--run", str(run.id), "--until-idle")
    try:
        _, stderr = worker.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("worker --run N --until-idle never started the queued run nor exited")
    finally:
        worker.kill()
    assert worker.returncode == 0, stderr[-2000:]
    assert runs.get_run(sessions, run.id).status == "done"
    assert len(runs.list_grades(sessions, run.id)) == 4
    assert runs.get_run(sessions, other.id).status == "queued"  # not one of its runs
