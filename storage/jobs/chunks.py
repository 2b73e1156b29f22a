"""Chunks: slices of one run's responses that workers claim, so several split one run.

The worker that holds the run (its owner) cuts the responses still to grade into chunks of
``CHUNK_SIZE`` consecutive response ids; any worker (the owner, or helpers that join a running
run) claims an open chunk, grades what in it has no grade yet and marks it done. A chunk whose
worker stopped renewing it for ``lease_seconds`` is claimable again. Claims are atomic:
``FOR UPDATE SKIP LOCKED`` on PostgreSQL, one conditional ``UPDATE ... RETURNING`` on SQLite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import ColumnElement, and_, delete, exists, func, or_, select, update

from storage import models as m
from storage.engine import SessionFactory
from storage.run_settings import cost_cap_of

CHUNK_SIZE = 25
# The last chunks are smaller (guided self-scheduling, Polychronopoulos and Kuck 1987): each
# is an eighth of what is left, so that several workers finish within a small chunk of each
# other instead of one grading a whole chunk of 25 while the others have nothing left.
TAIL_SHARE = 8
SMALLEST_CHUNK = 2
# The label of the chunks of a run's first pass after a provider pause
# (``storage.jobs.provider_breaker``): like a retry pass's, they hold the grades that failed
# transiently too (failed while the provider was down), besides the responses without one.
RESUME_PASS = 0


def chunk_sizes(count: int) -> list[int]:
    """The sizes of the chunks ``count`` responses are cut into, in order: ``CHUNK_SIZE``
    until an eighth of what is left is smaller, then that eighth (at least
    ``SMALLEST_CHUNK``)."""
    sizes: list[int] = []
    left = count
    while left > 0:
        size = min(left, CHUNK_SIZE, max(SMALLEST_CHUNK, -(-left // TAIL_SHARE)))
        sizes.append(size)
        left -= size
    return sizes


@dataclass(frozen=True)
class Chunk:
    id: int
    run_id: int
    pass_no: int
    first_response_id: int
    last_response_id: int


def _claimable(lease_seconds: float) -> ColumnElement[bool]:
    stale = m.utcnow() - timedelta(seconds=lease_seconds)
    chunk = m.RunChunkRow
    return or_(chunk.status == "open",
               and_(chunk.status == "taken",
                    or_(chunk.heartbeat_at.is_(None), chunk.heartbeat_at < stale)))


def plan_pass(sessions: SessionFactory, run_id: int, pass_no: int,
              response_ids: Sequence[int]) -> int:
    """Replace the run's chunks with chunks of ``pass_no`` over ``response_ids`` (of
    ``chunk_sizes``: ``CHUNK_SIZE`` responses, smaller at the end)."""
    ids = sorted(response_ids)
    rows = []
    start = 0
    for length in chunk_sizes(len(ids)):
        rows.append({"run_id": run_id, "pass_no": pass_no, "first_response_id": ids[start],
                     "last_response_id": ids[start + length - 1], "status": "open"})
        start += length
    with sessions.begin() as session:
        session.execute(delete(m.RunChunkRow).where(m.RunChunkRow.run_id == run_id))
        if rows:
            session.execute(m.RunChunkRow.__table__.insert(), rows)
    return len(rows)


# Pending ids read per query, and chunk rows written per statement, by plan_pending.
_ID_PAGE = 5000
_ROW_BATCH = 1000


def plan_pending(sessions: SessionFactory, run_id: int, pass_no: int, *,
                 with_transient: bool = False) -> int:
    """``plan_pass`` over the run's responses that have no grade yet, read from the database
    a page at a time: a run of a million responses never has all its ids in memory.
    ``with_transient``: and those whose grade failed transiently, in ``RESUME_PASS`` chunks."""
    graded = exists().where(m.GradeRow.run_id == run_id,
                            m.GradeRow.response_id == m.RunResponseRow.response_id)
    if with_transient:
        graded = graded.where(m.GradeRow.transient.is_(False))
        pass_no = RESUME_PASS
    pending = and_(m.RunResponseRow.run_id == run_id, ~graded)
    made = 0
    with sessions.begin() as session:
        count = session.scalar(select(func.count()).select_from(m.RunResponseRow)
                               .where(pending)) or 0
        session.execute(delete(m.RunChunkRow).where(m.RunChunkRow.run_id == run_id))
        sizes = iter(chunk_sizes(count))
        rows: list[dict] = []
        first, left, after = 0, 0, 0
        while True:
            ids = list(session.scalars(
                select(m.RunResponseRow.response_id)
                .where(pending, m.RunResponseRow.response_id > after)
                .order_by(m.RunResponseRow.response_id).limit(_ID_PAGE)))
            for response_id in ids:
                if left == 0:
                    # more pending than counted (a grade removed meanwhile): one more chunk
                    first, left = response_id, next(sizes, SMALLEST_CHUNK)
                left -= 1
                if left == 0:
                    rows.append({"run_id": run_id, "pass_no": pass_no, "status": "open",
                                 "first_response_id": first, "last_response_id": response_id})
            if len(rows) >= _ROW_BATCH or (not ids and rows):
                session.execute(m.RunChunkRow.__table__.insert(), rows)
                made += len(rows)
                rows = []
            if not ids:
                break
            after = ids[-1]
        if left:  # fewer pending than counted (graded meanwhile): the last chunk ends early
            session.execute(m.RunChunkRow.__table__.insert(), [{
                "run_id": run_id, "pass_no": pass_no, "status": "open",
                "first_response_id": first, "last_response_id": after}])
            made += 1
    return made


def _chunk(row) -> Chunk:
    return Chunk(id=row.id, run_id=row.run_id, pass_no=row.pass_no,
                 first_response_id=row.first_response_id,
                 last_response_id=row.last_response_id)


def claim_chunk(sessions: SessionFactory, run_id: int, worker_id: str, *,
                lease_seconds: float) -> Chunk | None:
    """Take the run's next claimable chunk; None when every chunk is taken or done."""
    take = {"status": "taken", "claimed_by": worker_id, "heartbeat_at": m.utcnow()}
    chunk = m.RunChunkRow
    where = and_(chunk.run_id == run_id, _claimable(lease_seconds))
    with sessions.begin() as session:
        if session.get_bind().dialect.name == "postgresql":
            chunk_id = session.scalar(
                select(chunk.id).where(where).order_by(chunk.id).limit(1)
                .with_for_update(skip_locked=True))
            if chunk_id is None:
                return None
            row = session.execute(update(chunk).where(chunk.id == chunk_id).values(**take)
                                  .returning(*chunk.__table__.c)).one()
            return _chunk(row)
        candidate = select(chunk.id).where(where).order_by(chunk.id).limit(1)
        row = session.execute(
            update(chunk).where(chunk.id == candidate.scalar_subquery(), where)
            .values(**take).returning(*chunk.__table__.c)).first()
        return None if row is None else _chunk(row)


def renew_chunks(sessions: SessionFactory, worker_id: str, chunk_ids: Sequence[int]
                 ) -> set[int]:
    """Heartbeat of our chunks; returns those still ours (a stale one may be taken over)."""
    if not chunk_ids:
        return set()
    with sessions.begin() as session:
        return set(session.scalars(update(m.RunChunkRow).where(
            m.RunChunkRow.id.in_(list(chunk_ids)), m.RunChunkRow.claimed_by == worker_id,
            m.RunChunkRow.status == "taken").values(heartbeat_at=m.utcnow())
            .returning(m.RunChunkRow.id)))


def finish_chunk(sessions: SessionFactory, chunk_id: int, worker_id: str) -> None:
    with sessions.begin() as session:
        session.execute(update(m.RunChunkRow).where(
            m.RunChunkRow.id == chunk_id, m.RunChunkRow.claimed_by == worker_id,
        ).values(status="done"))


def release_chunk(sessions: SessionFactory, chunk_id: int, worker_id: str) -> None:
    """Hand a chunk back (a worker stopping before it finished)."""
    with sessions.begin() as session:
        session.execute(update(m.RunChunkRow).where(
            m.RunChunkRow.id == chunk_id, m.RunChunkRow.claimed_by == worker_id,
            m.RunChunkRow.status == "taken",
        ).values(status="open", claimed_by=None, heartbeat_at=None))


def pending_in_chunk(sessions: SessionFactory, chunk: Chunk) -> list[int]:
    """The chunk's responses that have no grade yet; in a retry pass (or the ``RESUME_PASS``)
    also those whose grade failed transiently (it stays until the new grade replaces it)."""
    rr, grade = m.RunResponseRow, m.GradeRow
    graded = exists().where(grade.run_id == rr.run_id, grade.response_id == rr.response_id)
    if chunk.pass_no != 1:
        graded = graded.where(grade.transient.is_(False))
    with sessions() as session:
        return list(session.scalars(
            select(rr.response_id).where(
                rr.run_id == chunk.run_id,
                rr.response_id.between(chunk.first_response_id, chunk.last_response_id),
                ~graded,
            ).order_by(rr.response_id)))


def unfinished(sessions: SessionFactory, run_id: int) -> int:
    """Chunks of the run not done yet (open, or taken by a live or a dead worker)."""
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.RunChunkRow).where(
            m.RunChunkRow.run_id == run_id, m.RunChunkRow.status != "done")) or 0


def open_chunks(sessions: SessionFactory, run_ids: Sequence[int]) -> int:
    """The work of these runs no worker has claimed yet (what a new helper would find), in
    chunks of ``CHUNK_SIZE`` responses: the small chunks at the end of a pass count for what
    they hold, so a few responses left never look like work worth a new process. Counted by
    response ids, which a chunk's responses run through with few gaps."""
    chunk = m.RunChunkRow
    with sessions() as session:
        responses = session.scalar(
            select(func.sum(chunk.last_response_id - chunk.first_response_id + 1)).where(
                chunk.run_id.in_(list(run_ids)), chunk.status == "open")) or 0
    return -(-int(responses) // CHUNK_SIZE)


def joinable_run(sessions: SessionFactory, worker_id: str, *, lease_seconds: float,
                 among: Sequence[int] | None = None, exclude: Sequence[int] = ()) -> int | None:
    """A running run another worker holds, with a chunk to claim, for a helper to join.

    Never a run with a cost cap: its owner keeps the cap (``storage.jobs.cost_budget``) by
    counting the responses it has in flight, which a helper's are not (two processes each
    spent up to the whole cap)."""
    run, chunk = m.RunRow, m.RunChunkRow
    query = (select(run.id, run.settings).where(
        run.status == "running", run.claimed_by != worker_id,
        exists().where(chunk.run_id == run.id, _claimable(lease_seconds)),
    ).order_by(run.id))
    if among is not None:
        query = query.where(run.id.in_(list(among)))
    if exclude:
        query = query.where(run.id.not_in(list(exclude)))
    with sessions() as session:
        for run_id, settings in session.execute(query):
            if cost_cap_of((settings or {}).get("extra")) is None:
                return run_id
    return None
