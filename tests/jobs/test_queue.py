"""Claiming runs on SQLite and PostgreSQL: oldest first, never twice, resume after a lost
heartbeat, cancel, release."""

from __future__ import annotations

import threading
import time

import pytest

from storage.jobs import queue
from storage.services import runs
from tests.actors import ADMIN
from tests.jobs.helpers import make_dataset, make_rubric, make_run

API_BASE = "http://127.0.0.1:9/v1"  # never called here


def _runs(sessions, count: int) -> list[int]:
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    return [make_run(sessions, version.id, dataset.id, API_BASE).id for _ in range(count)]


def test_claims_take_the_oldest_queued_run_once(sessions):
    first, second = _runs(sessions, 2)
    assert queue.claim_next(sessions, "w1") == first
    assert queue.claim_next(sessions, "w2") == second
    assert queue.claim_next(sessions, "w3") is None
    run = runs.get_run(sessions, first)
    assert (run.status, run.claimed_by) == ("running", "w1")
    assert run.started_at is not None and run.heartbeat_at is not None


def test_cancelled_and_finished_runs_are_not_claimed(sessions):
    cancelled, finished = _runs(sessions, 2)
    runs.cancel_run(sessions, cancelled, actor=ADMIN)
    assert queue.claim_run(sessions, finished, "w1")
    runs.finish_run(sessions, finished)
    assert queue.claim_next(sessions, "w2") is None
    assert not queue.claim_run(sessions, cancelled, "w2")


def test_a_run_whose_worker_stopped_heartbeating_is_taken_over(sessions):
    [run_id] = _runs(sessions, 1)
    assert queue.claim_next(sessions, "dead", lease_seconds=0.3) == run_id
    assert queue.claim_next(sessions, "alive", lease_seconds=0.3) is None  # lease still fresh
    time.sleep(0.4)
    assert queue.claim_next(sessions, "alive", lease_seconds=0.3) == run_id
    assert runs.get_run(sessions, run_id).claimed_by == "alive"
    # The first worker learns it lost the run at its next heartbeat.
    assert queue.renew(sessions, run_id, "dead") == "lost"
    assert queue.renew(sessions, run_id, "alive") == "ok"


def test_renew_reports_a_cancellation(sessions):
    [run_id] = _runs(sessions, 1)
    queue.claim_run(sessions, run_id, "w1")
    before = runs.get_run(sessions, run_id).heartbeat_at
    time.sleep(0.01)
    assert queue.renew(sessions, run_id, "w1") == "ok"
    assert runs.get_run(sessions, run_id).heartbeat_at > before
    runs.cancel_run(sessions, run_id, actor=ADMIN)
    assert queue.renew(sessions, run_id, "w1") == "cancelled"


def test_a_released_run_goes_back_to_the_queue(sessions):
    [run_id] = _runs(sessions, 1)
    queue.claim_run(sessions, run_id, "w1")
    assert not queue.release(sessions, run_id, "w2")  # only its holder can release it
    assert queue.release(sessions, run_id, "w1")
    assert runs.get_run(sessions, run_id).status == "queued"
    assert queue.claim_next(sessions, "w2") == run_id


def test_a_requeued_run_is_claimable_again(sessions):
    [run_id] = _runs(sessions, 1)
    queue.claim_run(sessions, run_id, "w1")
    runs.cancel_run(sessions, run_id, actor=ADMIN)
    runs.requeue_run(sessions, run_id, actor=ADMIN)
    assert queue.claim_next(sessions, "w2") == run_id


def test_job_counters_add_up(sessions):
    [run_id] = _runs(sessions, 1)
    queue.add_job_stats(sessions, run_id, provider_calls=3, cache_hits=1)
    queue.add_job_stats(sessions, run_id, provider_calls=2, rate_limited=4)
    from storage.jobs import run_progress

    progress = run_progress(sessions, run_id)
    assert (progress.provider_calls, progress.cache_hits, progress.rate_limited) == (5, 1, 4)


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_concurrent_claims_never_take_the_same_run(sessions, backend):
    run_ids = _runs(sessions, 12)
    claimed: dict[str, list[int]] = {f"w{i}": [] for i in range(4)}
    barrier = threading.Barrier(4)

    def claim_all(worker: str) -> None:
        barrier.wait()
        while (run_id := queue.claim_next(sessions, worker)) is not None:
            claimed[worker].append(run_id)

    threads = [threading.Thread(target=claim_all, args=(w,)) for w in claimed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    taken = [r for ids in claimed.values() for r in ids]
    assert sorted(taken) == run_ids  # every run once, none twice
    for worker, ids in claimed.items():
        assert all(runs.get_run(sessions, r).claimed_by == worker for r in ids)
