"""Filling a new judge panel's decisions (``panel_verdicts`` / ``panel_grades``) from its
members' grades as a worker's job, not inside the request that made the panel (31-34 s at
10,000 responses x 3 members).

``panels.ensure_panel(fill="later")`` makes the panel with a ``panel_fills`` row; until the
row is gone the panel reads as being built (``PanelInfo.building``) and its figures are
refused (``panels.PanelBuildingError``), never shown partial. A worker (the app's in-process
one, or ``rubric-workbench worker``) claims the row (compare-and-set on ``claimed_by``, so
two workers or a second tab never fill it twice) and fills the responses some member
graded in id order, ``CHUNK`` per transaction, each chunk moving ``after_response_id`` on:
a worker that stops or dies leaves the cursor where its last chunk committed, and the next
worker to find the row silent for ``STALE_SECONDS`` resumes from there.

A member's grade landing meanwhile is never lost: the grade's own transaction recomputes
that response in every panel of the run (``panel_upkeep.refresh``, which finds this panel
the moment it is committed), and a chunk recomputes its responses after locking them
exactly as a grade writer does (``panel_upkeep.fill_some``; PostgreSQL: ``FOR NO KEY
UPDATE`` in id order), so of the two recomputations of one response the later one reads
the other's grades. Lock order, PostgreSQL: a chunk takes the panel's row (key share, as
its rows' foreign keys do), then its ``panel_fills`` row, then the responses; a grade
writer takes its run's row, then the responses (``panel_upkeep.lock``), then people_scores'
share locks, and never a ``panel_fills`` row; a deletion takes the panel's row first. No
cycle. SQLite: every chunk starts with a write, so writers are serial.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from sqlalchemy import delete, func, or_, select, update

from storage import models as m
from storage.engine import SessionFactory, retry_db
from storage.services import panel_upkeep

log = logging.getLogger(__name__)

CHUNK = 500  # responses per transaction: ~1 s under load, the cursor's step after a crash
STALE_SECONDS = 60.0  # a fill whose worker is silent this long is taken over
FILLS = m.PanelFillRow


@dataclass(frozen=True)
class FillOutcome:
    # filled: the panel is ready (now, or already was); busy: another live worker holds it;
    # gone: the panel was deleted; stopped: asked to stop, the claim released for the next
    status: Literal["filled", "busy", "gone", "stopped"]
    chunks: int = 0  # chunks this call committed


def queue_fill(session, panel_id: int) -> None:
    """The panel is to be filled by a worker (inside the transaction that makes it)."""
    session.add(FILLS(panel_id=panel_id, after_response_id=0, done=0))


def next_fill(sessions: SessionFactory, *, stale_after: float = STALE_SECONDS,
              exclude: tuple[int, ...] = ()) -> int | None:
    """The oldest panel waiting to be filled (nobody on it, or its worker silent), or None."""
    stale = m.utcnow() - timedelta(seconds=stale_after)
    query = (select(FILLS.panel_id)
             .where(or_(FILLS.claimed_by.is_(None), FILLS.heartbeat_at.is_(None),
                        FILLS.heartbeat_at < stale))
             .order_by(FILLS.panel_id).limit(1))
    if exclude:
        query = query.where(FILLS.panel_id.not_in(exclude))
    with sessions() as session:
        return session.scalar(query)


def fill_panel(sessions: SessionFactory, panel_id: int, *, worker: str,
               stale_after: float = STALE_SECONDS, chunk: int = CHUNK,
               stop: threading.Event | None = None, max_chunks: int | None = None,
               ) -> FillOutcome:
    """Fill the panel as ``worker``, from where the last worker left it. ``max_chunks``
    stops after that many chunks (tests: a worker that dies half way)."""
    claimed = retry_db(_claim, sessions, panel_id, worker, stale_after)
    if claimed != "claimed":
        return FillOutcome(claimed)
    memo: dict = {}  # each distinct pattern of votes decided once, across the chunks
    chunks = 0
    while True:
        if (stop is not None and stop.is_set()) or (max_chunks is not None
                                                     and chunks >= max_chunks):
            if stop is not None and stop.is_set():
                retry_db(_release, sessions, panel_id, worker)
            return FillOutcome("stopped", chunks)
        state = retry_db(_fill_chunk, sessions, panel_id, worker, chunk, memo)
        if state == "more":
            chunks += 1
            continue
        if state == "filled":
            log.info("judge panel %s filled by %s", panel_id, worker)
            return FillOutcome("filled", chunks + 1)
        return FillOutcome(_after_losing(sessions, panel_id), chunks)


def fill_as_worker(sessions: SessionFactory, panel_id: int, worker: str,
                   stop: threading.Event | None = None) -> bool:
    """A worker's fill; True when the panel is filled. Nothing raises into the worker's loop:
    a fault is logged, and the row waits for the next worker (or this one, later)."""
    try:
        return fill_panel(sessions, panel_id, worker=worker, stop=stop).status == "filled"
    except Exception:
        log.exception("judge panel %s could not be filled by %s", panel_id, worker)
        return False


def _claim(sessions: SessionFactory, panel_id: int, worker: str, stale_after: float) -> str:
    now = m.utcnow()
    stale = now - timedelta(seconds=stale_after)
    with sessions.begin() as session:
        taken = session.execute(
            update(FILLS).where(FILLS.panel_id == panel_id,
                                or_(FILLS.claimed_by.is_(None), FILLS.claimed_by == worker,
                                    FILLS.heartbeat_at.is_(None), FILLS.heartbeat_at < stale))
            .values(claimed_by=worker, heartbeat_at=now)
            .returning(FILLS.total)).first()
        if taken is None:
            if session.get(FILLS, panel_id) is not None:
                return "busy"
            return "filled" if session.get(m.PanelRow, panel_id) is not None else "gone"
        if taken.total is None:  # the progress' denominator, counted once
            members = _members(session, panel_id)
            total = session.scalar(select(func.count(func.distinct(m.GradeRow.response_id)))
                                   .where(m.GradeRow.run_id.in_(members)))
            session.execute(update(FILLS).where(FILLS.panel_id == panel_id)
                            .values(total=total or 0))
    return "claimed"


def _release(sessions: SessionFactory, panel_id: int, worker: str) -> None:
    with sessions.begin() as session:
        session.execute(update(FILLS).where(FILLS.panel_id == panel_id,
                                            FILLS.claimed_by == worker)
                        .values(claimed_by=None, heartbeat_at=None))


def _after_losing(sessions: SessionFactory, panel_id: int
                  ) -> Literal["filled", "busy", "gone"]:
    with sessions() as session:
        if session.get(FILLS, panel_id) is not None:
            return "busy"  # taken over (this worker was silent too long)
        return "filled" if session.get(m.PanelRow, panel_id) is not None else "gone"


def _members(session, panel_id: int) -> list[int]:
    return list(session.scalars(select(m.PanelMemberRow.run_id)
                                .where(m.PanelMemberRow.panel_id == panel_id)
                                .order_by(m.PanelMemberRow.position)))


def _fill_chunk(sessions: SessionFactory, panel_id: int, worker: str, chunk: int,
                memo: dict) -> Literal["more", "filled", "lost"]:
    """One chunk in one transaction: "filled" when nothing was left (the row removed),
    "lost" when the row is not this worker's any more (taken over, rebuilt, deleted)."""
    with sessions.begin() as session:
        if session.get_bind().dialect.name == "postgresql":  # see the module's docstring
            session.execute(select(m.PanelRow.id).where(m.PanelRow.id == panel_id)
                            .with_for_update(read=True, key_share=True))
        held = session.execute(  # the write first: SQLite's write lock from here on
            update(FILLS).where(FILLS.panel_id == panel_id, FILLS.claimed_by == worker)
            .values(heartbeat_at=m.utcnow())
            .returning(FILLS.after_response_id, FILLS.done)).first()
        if held is None:
            return "lost"
        panel = session.get(m.PanelRow, panel_id)
        assert panel is not None  # the row above cascades with it
        ids = list(session.scalars(
            select(m.GradeRow.response_id)
            .where(m.GradeRow.run_id.in_([member.run_id for member in panel.members]),
                   m.GradeRow.response_id > held.after_response_id)
            .distinct().order_by(m.GradeRow.response_id).limit(chunk)))
        if not ids:
            session.execute(delete(FILLS).where(FILLS.panel_id == panel_id))
            return "filled"
        panel_upkeep.fill_some(session, panel, ids, memo)
        session.execute(update(FILLS).where(FILLS.panel_id == panel_id)
                        .values(after_response_id=ids[-1], done=held.done + len(ids)))
        return "more"
