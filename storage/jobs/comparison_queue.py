"""Comparisons for workers: the next one waiting to be judged, and judging it as a worker.

A comparison is waiting when it is queued, or running with a holder silent for longer than
``comparison_runner.STALE_SECONDS`` (a process that stopped or died: its stored pairs stay,
the runner judges the rest). ``comparison_runner`` itself refuses a comparison another live
process is judging, so two workers that pick the same one judge it once.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import or_, select

from grading.errors import RubricWorkbenchError
from storage import models as m
from storage.engine import SessionFactory
from storage.errors import StorageError

log = logging.getLogger(__name__)


def next_comparison(sessions: SessionFactory, *, stale_after: float,
                    exclude: tuple[int, ...] = ()) -> int | None:
    """The oldest comparison waiting to be judged, or None."""
    stale = m.utcnow() - timedelta(seconds=stale_after)
    query = (select(m.ComparisonRow.id)
             .where(or_(m.ComparisonRow.status == "queued",
                        (m.ComparisonRow.status == "running")
                        & or_(m.ComparisonRow.heartbeat_at.is_(None),
                              m.ComparisonRow.heartbeat_at < stale)))
             .order_by(m.ComparisonRow.id).limit(1))
    if exclude:
        query = query.where(m.ComparisonRow.id.not_in(exclude))
    with sessions() as session:
        return session.scalar(query)


async def judge_as_worker(sessions: SessionFactory, comparison_id: int, worker_id: str) -> None:
    """Judge one comparison for a worker; what stops it (taken by another process, deleted)
    is logged, never raised into the worker's loop."""
    from storage.jobs.comparison_runner import run_comparison
    from storage.services.reviewers import command_line_actor

    try:
        done = await run_comparison(sessions, comparison_id, actor=command_line_actor(worker_id),
                                    worker=worker_id)
    except (RubricWorkbenchError, StorageError) as exc:
        log.info("comparison %s was not judged by %s: %s", comparison_id, worker_id, exc)
        return
    except Exception:
        log.exception("comparison %s stopped with an unexpected error", comparison_id)
        return
    log.info("comparison %s ended %s: %s of %s pairs judged, %s failed", comparison_id,
             done.status, done.done_count, done.pair_count, done.failed_count)
