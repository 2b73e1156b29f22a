"""Comparisons for workers: the next one waiting to be judged, judging it as a worker, and
queueing one again (Resume) so a worker takes it.

A comparison is waiting when it is queued, or running with a holder silent for longer than
``comparison_runner.STALE_SECONDS`` (a process that stopped or died: its stored pairs stay,
the runner judges the rest). ``comparison_runner`` itself refuses a comparison another live
process is judging, so two workers that pick the same one judge it once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import or_, select, update

from grading.errors import RubricWorkbenchError
from storage import models as m
from storage.engine import SessionFactory
from storage.errors import InvalidStateError, StorageError
from storage.repositories import comparisons as repo
from storage.services.comparisons import ComparisonInfo, get_comparison
from storage.services.people import record
from storage.services.reviewers import Actor, Role, require

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


async def judge_as_worker(sessions: SessionFactory, comparison_id: int, worker_id: str
                          ) -> bool:
    """Judge one comparison for a worker; True when the runner saw it to its end (judged,
    or found cancelled). What stops it (taken by another process, deleted, the database
    away) is logged, never raised into the worker's loop, and gives False."""
    from storage.jobs.comparison_runner import run_comparison
    from storage.services.reviewers import command_line_actor

    try:
        done = await run_comparison(sessions, comparison_id, actor=command_line_actor(worker_id),
                                    worker=worker_id)
    except (RubricWorkbenchError, StorageError) as exc:
        log.info("comparison %s was not judged by %s: %s", comparison_id, worker_id, exc)
        return False
    except Exception:
        log.exception("comparison %s stopped with an unexpected error", comparison_id)
        return False
    log.info("comparison %s ended %s: %s of %s pairs judged, %s failed", comparison_id,
             done.status, done.done_count, done.pair_count, done.failed_count)
    return True


@dataclass(frozen=True)
class Requeued:
    comparison: ComparisonInfo
    # False when it was already waiting or being judged (a second tab's Resume): nothing
    # was changed, so nothing is judged twice.
    queued: bool
    retried: int = 0  # failed pairs put back to pending


def requeue_comparison(sessions: SessionFactory, comparison_id: int, *, actor: Actor,
                       stale_after: float | None = None) -> Requeued:
    """Queue a comparison again so a worker takes it: one that ended with failed or
    unjudged pairs (failed, cancelled, done with failures), or one running with a holder
    silent for ``stale_after`` seconds. Its failed pairs go back to pending; the judged
    ones are kept. Queued, or running with a live holder: left as it is."""
    from storage.jobs.comparison_runner import STALE_SECONDS

    require(actor, Role.ADMIN, "resume a comparison")
    stale_after = STALE_SECONDS if stale_after is None else stale_after
    with sessions.begin() as session:
        row = repo.get(session, comparison_id, for_update=True)
        now = m.utcnow()
        live = (row.status == "running" and row.heartbeat_at is not None
                and now - row.heartbeat_at < timedelta(seconds=stale_after))
        retried = (None if row.status == "queued" or live
                   else _queue_again(session, actor, row))
    return Requeued(get_comparison(sessions, comparison_id), queued=retried is not None,
                    retried=retried or 0)


def _queue_again(session, actor: Actor, row: m.ComparisonRow) -> int | None:
    """The comparison queued and its failed pairs back to pending; how many had failed, or
    None when another tab queued it first. The raise rolls everything back: a comparison
    with nothing left stays as it was."""
    # Compare-and-set on the status read: on SQLite the read above locks nothing, so two
    # tabs both read 'cancelled'; the second one's update waits for the first and matches
    # no row.
    changed = session.execute(
        update(m.ComparisonRow)
        .where(m.ComparisonRow.id == row.id, m.ComparisonRow.status == row.status)
        # heartbeat: when it was queued, so the page does not call it stale
        .values(status="queued", claimed_by=None, heartbeat_at=m.utcnow(), error=None,
                finished_at=None)).rowcount
    if not changed:
        return None
    retried = repo.reset_failed(session, row.id)
    states = repo.count_states(session, row.id)
    if not states.get("pending"):
        raise InvalidStateError(
            f"comparison {row.id} has every pair compared; nothing to resume "
            "(start a new comparison to judge them again)")
    session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == row.id)
                    .values(done_count=states.get("done", 0), failed_count=0))
    record(session, actor, "resume comparison", "comparison", row.id, row.name,
           f"{states['pending']} pairs to compare ({retried} failed before)")
    return retried
