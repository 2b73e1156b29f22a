"""Resume after something went wrong: a comparison queued again (requeue_comparison) is
taken by the running worker at once — after a cancel, with failed pairs, after its worker
already judged it once — a second tab's Resume changes nothing, and one with nothing left
is refused; over the real litellm HTTP path against the fake provider on SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from sqlalchemy import func, select

from storage import models as m
from storage.errors import InvalidStateError
from storage.jobs.comparison_queue import next_comparison, requeue_comparison
from storage.jobs.comparison_runner import run_comparison
from storage.jobs.worker import Worker
from storage.services import comparisons
from tests.actors import ADMIN
from tests.fake_provider import Reply, judge_reply
from tests.jobs.test_comparison_runs import FAST, create, judged_at, setup

__all__ = ["setup"]


def _failing_q2(broken: dict[str, bool]):
    def reply(body):
        if broken["on"] and "two more words" in body["messages"][-1]["content"]:
            return Reply(status=400, error_message="the request was refused")
        return judge_reply(body)
    return reply


async def _until(check, timeout: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {timeout} s")


def _resume_events(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.AuditEventRow)
                              .where(m.AuditEventRow.action == "resume comparison"))


async def test_a_running_worker_takes_a_comparison_it_judged_again_once_resumed(
        sessions, fake_provider, setup):
    """The worker that judged it a moment ago takes it again as soon as it is queued (it
    used to wait 60 s: a comparison it had taken was skipped for that long)."""
    broken = {"on": True}
    fake_provider.default = _failing_q2(broken)
    made = create(sessions, fake_provider, *setup)
    worker = Worker(sessions, poll_interval=0.05)
    stop = asyncio.Event()
    loop = asyncio.create_task(worker.run(stop))
    try:
        await _until(lambda: comparisons.get_comparison(sessions, made.id).finished, 60)
        first = comparisons.get_comparison(sessions, made.id)
        assert (first.status, first.done_count, first.failed_count) == ("done", 3, 1)
        kept = judged_at(sessions, made.id)
        broken["on"] = False

        again = requeue_comparison(sessions, made.id, actor=ADMIN)

        assert (again.queued, again.retried) == (True, 1)
        assert (again.comparison.status, again.comparison.failed_count) == ("queued", 0)
        # 30 s for a loaded machine; the old skip lasted 60 s
        await _until(lambda: comparisons.get_comparison(sessions, made.id).finished, 30)
    finally:
        stop.set()
        await asyncio.wait_for(loop, 30)
    ended = comparisons.get_comparison(sessions, made.id)
    assert (ended.status, ended.done_count, ended.failed_count, ended.error) == (
        "done", 4, 0, None)
    assert {k: v for k, v in judged_at(sessions, made.id).items() if k != "q2"} == kept


async def test_a_cancelled_comparison_resumes_with_only_the_pairs_left(
        sessions, fake_provider, setup):
    made = create(sessions, fake_provider, *setup)
    fake_provider.default = lambda body: (
        Reply(judge_reply(body).content, delay=1.0)
        if "four" in body["messages"][-1]["content"] else judge_reply(body))
    task = asyncio.create_task(run_comparison(sessions, made.id, actor=ADMIN, worker="page",
                                              batch=3, **FAST))
    await _until(lambda: comparisons.get_comparison(sessions, made.id).done_count, 30)
    comparisons.cancel_comparison(sessions, made.id, actor=ADMIN)
    await task
    cancelled = comparisons.get_comparison(sessions, made.id)
    assert (cancelled.status, cancelled.done_count) == ("cancelled", 3)
    kept = judged_at(sessions, made.id)

    again = requeue_comparison(sessions, made.id, actor=ADMIN)

    assert (again.queued, again.comparison.status) == (True, "queued")
    assert next_comparison(sessions, stale_after=60) == made.id
    worker = Worker(sessions, poll_interval=0.05)
    stop = asyncio.Event()
    loop = asyncio.create_task(worker.run(stop))
    try:
        await _until(lambda: comparisons.get_comparison(sessions, made.id).finished, 30)
    finally:
        stop.set()
        await asyncio.wait_for(loop, 30)
    ended = comparisons.get_comparison(sessions, made.id)
    assert (ended.status, ended.done_count, ended.failed_count) == ("done", 4, 0)
    assert {k: v for k, v in judged_at(sessions, made.id).items() if k != "q4"} == kept


async def test_a_second_resume_changes_nothing_and_the_pairs_are_judged_once(
        sessions, fake_provider, setup):
    made = create(sessions, fake_provider, *setup)
    comparisons.cancel_comparison(sessions, made.id, actor=ADMIN)
    barrier = threading.Barrier(2)
    outcomes = []

    def press() -> None:  # two tabs press Resume at the same moment
        barrier.wait()
        outcomes.append(requeue_comparison(sessions, made.id, actor=ADMIN))

    tabs = [threading.Thread(target=press) for _ in range(2)]
    for tab in tabs:
        tab.start()
    for tab in tabs:
        tab.join(30)

    assert sorted(o.queued for o in outcomes) == [False, True]
    assert _resume_events(sessions) == 1
    ended = await run_comparison(sessions, made.id, actor=ADMIN, worker="w", **FAST)
    assert (ended.status, ended.done_count) == ("done", 4)
    assert fake_provider.requests == 4 * 2 * 2
    with sessions() as session:
        assert session.scalar(select(func.count())
                              .select_from(m.ComparisonPreferenceRow)) == 8


async def test_resume_leaves_a_comparison_a_live_process_judges_alone(
        sessions, fake_provider, setup):
    made = create(sessions, fake_provider, *setup)
    with sessions.begin() as session:  # a worker holds it and beats
        row = session.get(m.ComparisonRow, made.id)
        row.status, row.claimed_by, row.heartbeat_at = "running", "busy-worker", m.utcnow()

    again = requeue_comparison(sessions, made.id, actor=ADMIN)

    assert (again.queued, again.comparison.status) == (False, "running")
    assert _resume_events(sessions) == 0
    # silent longer than the stale limit: queued again, its holder's claim dropped
    taken = requeue_comparison(sessions, made.id, actor=ADMIN, stale_after=0.0)
    assert (taken.queued, taken.comparison.status) == (True, "queued")
    with sessions() as session:
        assert session.get(m.ComparisonRow, made.id).claimed_by is None


async def test_a_comparison_with_every_pair_compared_is_not_resumed(
        sessions, fake_provider, setup):
    made = create(sessions, fake_provider, *setup)
    await run_comparison(sessions, made.id, actor=ADMIN, **FAST)

    with pytest.raises(InvalidStateError, match="every pair compared; nothing to resume"):
        requeue_comparison(sessions, made.id, actor=ADMIN)

    assert comparisons.get_comparison(sessions, made.id).status == "done"
    assert _resume_events(sessions) == 0


def test_only_an_admin_resumes_a_comparison(sessions, fake_provider, setup):
    from storage.services.reviewers import Actor, PermissionDeniedError, Role

    reviewer = Actor(key="rita", name="Rita", roles=frozenset({Role.REVIEWER}))
    made = create(sessions, fake_provider, *setup)
    comparisons.cancel_comparison(sessions, made.id, actor=ADMIN)
    with pytest.raises(PermissionDeniedError):
        requeue_comparison(sessions, made.id, actor=reviewer)
    assert comparisons.get_comparison(sessions, made.id).status == "cancelled"
