"""Claiming runs from the shared database.

A run is claimable when it is ``queued``, or ``running`` with a heartbeat older than the
lease (its worker died: the run resumes and grades only what has no stored grade).

- PostgreSQL: ``SELECT ... FOR UPDATE SKIP LOCKED`` picks a run no other worker is claiming,
  then one UPDATE takes it; any number of workers on any number of machines.
- SQLite: one conditional ``UPDATE ... WHERE id = (SELECT ...) RETURNING id`` statement, atomic
  under SQLite's single writer. Meant for one worker (several are safe, only slower).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import timedelta
from typing import Literal

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from storage import models as m
from storage.engine import SessionFactory

DEFAULT_LEASE_SECONDS = 60.0
RenewResult = Literal["ok", "cancelled", "lost"]


def _claimable(lease_seconds: float) -> ColumnElement[bool]:
    stale = m.utcnow() - timedelta(seconds=lease_seconds)
    run = m.RunRow
    return or_(
        run.status == "queued",
        and_(run.status == "running",
             or_(run.heartbeat_at.is_(None), run.heartbeat_at < stale)),
    )


def _take(worker_id: str) -> dict:
    now = m.utcnow()
    return {
        "status": "running", "claimed_by": worker_id, "heartbeat_at": now,
        "started_at": func.coalesce(m.RunRow.started_at, now), "finished_at": None,
    }


def claim_next(
    sessions: SessionFactory, worker_id: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS,
    exclude: Collection[int] = (), among: Collection[int] | None = None,
) -> int | None:
    """Take the oldest claimable run (of ``among``, when given) for ``worker_id``; None when
    there is none.

    ``exclude``: the runs this worker is executing. A run whose heartbeat lapsed (a slow
    start, a stalled machine) looks abandoned, but its worker is alive: taking it again
    would grade it twice at once, and both would renew the same claim.
    """
    with sessions.begin() as session:
        claimable = _claimable(lease_seconds)
        if exclude:
            claimable = and_(claimable, m.RunRow.id.not_in(list(exclude)))
        if among is not None:
            claimable = and_(claimable, m.RunRow.id.in_(list(among)))
        if session.get_bind().dialect.name == "postgresql":
            run_id = session.scalar(
                select(m.RunRow.id).where(claimable).order_by(m.RunRow.id).limit(1)
                .with_for_update(skip_locked=True)
            )
            if run_id is None:
                return None
            session.execute(update(m.RunRow).where(m.RunRow.id == run_id)
                            .values(**_take(worker_id)))
            return run_id
        candidate = select(m.RunRow.id).where(claimable).order_by(m.RunRow.id).limit(1)
        return session.scalar(
            update(m.RunRow)
            .where(m.RunRow.id == candidate.scalar_subquery(), claimable)
            .values(**_take(worker_id))
            .returning(m.RunRow.id)
        )


def claim_run(
    sessions: SessionFactory, run_id: int, worker_id: str, *,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
) -> bool:
    """Take this run if it is claimable (the CLI runs the runs it created itself)."""
    with sessions.begin() as session:
        claimed = session.scalar(
            update(m.RunRow)
            .where(m.RunRow.id == run_id, _claimable(lease_seconds))
            .values(**_take(worker_id))
            .returning(m.RunRow.id)
        )
        return claimed is not None


def has_active_runs(sessions: SessionFactory, among: Sequence[int] | None = None) -> bool:
    """Whether any run (of ``among``, when given) is queued or running."""
    query = select(m.RunRow.id).where(m.RunRow.status.in_(("queued", "running"))).limit(1)
    if among is not None:
        query = query.where(m.RunRow.id.in_(list(among)))
    with sessions() as session:
        return session.scalar(query) is not None


def renew(sessions: SessionFactory, run_id: int, worker_id: str) -> RenewResult:
    """Heartbeat: ``ok`` while the run is still ours and running; else why to stop."""
    with sessions.begin() as session:
        renewed = session.scalar(
            update(m.RunRow)
            .where(m.RunRow.id == run_id, m.RunRow.claimed_by == worker_id,
                   m.RunRow.status == "running")
            .values(heartbeat_at=m.utcnow())
            .returning(m.RunRow.id)
        )
        if renewed is not None:
            return "ok"
        status = session.scalar(select(m.RunRow.status).where(m.RunRow.id == run_id))
    return "cancelled" if status in ("cancelled", None) else "lost"


def release(sessions: SessionFactory, run_id: int, worker_id: str) -> bool:
    """Hand a running run back to the queue (a worker stopping politely)."""
    with sessions.begin() as session:
        released = session.scalar(
            update(m.RunRow)
            .where(m.RunRow.id == run_id, m.RunRow.claimed_by == worker_id,
                   m.RunRow.status == "running")
            .values(status="queued", claimed_by=None, heartbeat_at=None)
            .returning(m.RunRow.id)
        )
        return released is not None


def add_job_stats(
    sessions: SessionFactory, run_id: int, *, provider_calls: int = 0, cache_hits: int = 0,
    rate_limited: int = 0,
) -> None:
    """Add to a run's job counters (an upsert of atomic increments)."""
    if not (provider_calls or cache_hits or rate_limited):
        return
    with sessions.begin() as session:
        dialect = session.get_bind().dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        table = m.RunJobStatsRow.__table__
        statement = insert(m.RunJobStatsRow).values(
            run_id=run_id, provider_calls=provider_calls, cache_hits=cache_hits,
            rate_limited=rate_limited,
        )
        session.execute(statement.on_conflict_do_update(
            index_elements=[m.RunJobStatsRow.run_id],
            set_={
                "provider_calls": table.c.provider_calls + provider_calls,
                "cache_hits": table.c.cache_hits + cache_hits,
                "rate_limited": table.c.rate_limited + rate_limited,
            },
        ))
