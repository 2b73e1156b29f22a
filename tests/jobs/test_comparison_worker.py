"""Workers judge comparisons too: one queued by the Compare page, and one whose process
stopped (running, its holder silent), over the real litellm HTTP path against the fake
provider on SQLite and PostgreSQL — so a comparison survives an app restart and runs on
`rubric-workbench worker` processes like a grading run."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import update

from storage import models as m
from storage.jobs.comparison_queue import next_comparison
from storage.jobs.worker import Worker
from storage.services import comparisons
from tests.jobs.test_comparison_runs import create, setup

__all__ = ["setup"]


async def _work_until_done(sessions, comparison_id: int, **options) -> Worker:
    worker = Worker(sessions, poll_interval=0.05, **options)
    stop = asyncio.Event()
    loop = asyncio.create_task(worker.run(stop))
    for _ in range(600):
        await asyncio.sleep(0.05)
        if comparisons.get_comparison(sessions, comparison_id).status in ("done", "failed"):
            break
    stop.set()
    await asyncio.wait_for(loop, 30)
    return worker


async def test_a_worker_judges_a_queued_comparison(sessions, fake_provider, setup):
    made = create(sessions, fake_provider, *setup)
    assert next_comparison(sessions, stale_after=60) == made.id

    await _work_until_done(sessions, made.id)

    done = comparisons.get_comparison(sessions, made.id)
    assert (done.status, done.done_count, done.failed_count) == ("done", 4, 0)
    assert fake_provider.requests == 4 * 2 * 2  # 4 pairs x 2 criteria x both orders
    assert next_comparison(sessions, stale_after=60) is None


async def test_a_comparison_whose_process_stopped_is_taken_over_only_once_stale(
        sessions, fake_provider, setup):
    made = create(sessions, fake_provider, *setup)
    with sessions.begin() as session:  # a process took it, then went silent
        session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == made.id).values(
            status="running", claimed_by="gone-process",
            heartbeat_at=m.utcnow() - timedelta(seconds=5)))
    assert next_comparison(sessions, stale_after=60) is None  # silent 5 s: still its own
    assert next_comparison(sessions, stale_after=1) == made.id

    with sessions.begin() as session:
        session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == made.id)
                        .values(heartbeat_at=m.utcnow() - timedelta(seconds=120)))
    await _work_until_done(sessions, made.id)

    assert comparisons.get_comparison(sessions, made.id).status == "done"


async def test_a_worker_bound_to_runs_leaves_comparisons_alone(sessions, fake_provider,
                                                               setup):
    made = create(sessions, fake_provider, *setup)
    worker = Worker(sessions, poll_interval=0.05, only_runs=(999,))
    stop = asyncio.Event()
    loop = asyncio.create_task(worker.run(stop))
    await asyncio.sleep(1.0)
    stop.set()
    await asyncio.wait_for(loop, 30)
    assert comparisons.get_comparison(sessions, made.id).status == "queued"
    assert fake_provider.requests == 0
