"""A wording trial's status and progress, kept in the database while it runs.

A trial runs in a background thread of one app process. Its row says how many responses it
plans (``total``), what it has judged so far (``results``), who runs it (``claimed_by``, the
process) and when that process last said so (``heartbeat_at``). So a reload or a second
browser shows its progress, and a trial whose process is gone — the app was stopped or
killed — reads as **interrupted**, and can be tried again: the answers it got are kept, and
those it asked the provider for come from the cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update

from storage import models as m
from storage.engine import SessionFactory
from storage.errors import InvalidStateError, NotFoundError
from storage.services.reviewers import Actor, Role, require

# A running trial beats every HEARTBEAT_SECONDS; one silent for LEASE_SECONDS was interrupted
# (a process of this machine that is gone is known at once, without waiting).
HEARTBEAT_SECONDS = 2.0
LEASE_SECONDS = 30.0
FINISHED = ("done", "stopped", "failed")


@dataclass(frozen=True)
class TrialStatus:
    trial_id: int
    criterion_id: int
    requirement: str
    status: str  # running | interrupted | done | stopped | failed
    judged: int
    total: int | None
    note: str
    cost: float | None
    created_by: str
    created_at: datetime

    @property
    def fraction(self) -> float:
        return min(1.0, self.judged / self.total) if self.total else 0.0


def _process_gone(worker: str | None) -> bool:
    from storage.jobs.resume import process_gone

    return process_gone(worker)


def status_of(row: m.CriterionTrialRow, now: datetime) -> str:
    if row.status != "running":
        return row.status
    if _process_gone(row.claimed_by):
        return "interrupted"
    beat = row.heartbeat_at or row.created_at
    if now - beat > timedelta(seconds=LEASE_SECONDS):
        return "interrupted"
    return "running"


def _info(row: m.CriterionTrialRow, now: datetime) -> TrialStatus:
    return TrialStatus(
        trial_id=row.id, criterion_id=row.criterion_id, requirement=row.requirement,
        status=status_of(row, now), judged=len(row.results or []), total=row.total,
        note=row.note, cost=row.cost, created_by=row.created_by, created_at=row.created_at)


def begin(sessions: SessionFactory, *, criterion_id: int, base_run_id: int, requirement: str,
          total: int, max_cost: float | None, actor: Actor, worker: str) -> int:
    """The trial's row, running, before its first call: any page can follow it from now."""
    now = m.utcnow()
    with sessions.begin() as session:
        row = m.CriterionTrialRow(
            criterion_id=criterion_id, base_run_id=base_run_id, requirement=requirement,
            status="running", note="", cost=None, results=[], created_by=actor.key,
            total=total, max_cost=max_cost, claimed_by=worker, heartbeat_at=now,
            created_at=now)
        session.add(row)
        session.flush()
        return row.id


def save(sessions: SessionFactory, trial_id: int, worker: str, *, results: Sequence[dict],
         cost: float | None, status: str = "running", note: str = "") -> bool:
    """Store the progress (or the end) of a trial this worker holds; False when another
    process took it over meanwhile (a retry), so this one writes nothing."""
    with sessions.begin() as session:
        changed = session.execute(
            update(m.CriterionTrialRow)
            .where(m.CriterionTrialRow.id == trial_id,
                   m.CriterionTrialRow.claimed_by == worker)
            .values(results=list(results), cost=cost, status=status, note=note,
                    heartbeat_at=m.utcnow(),
                    claimed_by=worker if status == "running" else None))
        return changed.rowcount == 1


def trial_status(sessions: SessionFactory, trial_id: int, *,
                 now: datetime | None = None) -> TrialStatus:
    with sessions() as session:
        row = session.get(m.CriterionTrialRow, trial_id)
        if row is None:
            raise NotFoundError(f"wording trial {trial_id} does not exist")
        return _info(row, now or m.utcnow())


def statuses(sessions: SessionFactory, criterion_id: int, *,
             now: datetime | None = None) -> list[TrialStatus]:
    """Every trial of a criterion, newest first."""
    with sessions() as session:
        rows = session.scalars(select(m.CriterionTrialRow)
                               .where(m.CriterionTrialRow.criterion_id == criterion_id)
                               .order_by(m.CriterionTrialRow.id.desc()))
        moment = now or m.utcnow()
        return [_info(row, moment) for row in rows]


def claim_retry(sessions: SessionFactory, trial_id: int, *, actor: Actor, worker: str,
                now: datetime | None = None) -> tuple[list[dict[str, Any]], float | None,
                                                       float | None]:
    """Take over an interrupted (or failed) trial: (results so far, its cost cap, cost so
    far). Refused while it runs or once it ended well; two retries cannot both win."""
    require(actor, Role.ADMIN, "try a criterion's new wording")
    with sessions.begin() as session:
        row = session.get(m.CriterionTrialRow, trial_id, with_for_update=True)
        if row is None:
            raise NotFoundError(f"wording trial {trial_id} does not exist")
        status = status_of(row, now or m.utcnow())
        if status not in ("interrupted", "failed"):
            raise InvalidStateError(
                f"wording trial {trial_id} is {status}: only an interrupted or failed trial "
                "can be tried again")
        taken = session.execute(
            update(m.CriterionTrialRow)
            .where(m.CriterionTrialRow.id == trial_id,
                   m.CriterionTrialRow.status == row.status,
                   _same(m.CriterionTrialRow.claimed_by, row.claimed_by))
            .values(status="running", note="", claimed_by=worker, heartbeat_at=m.utcnow()))
        if taken.rowcount != 1:
            raise InvalidStateError(f"wording trial {trial_id} was tried again meanwhile")
        return list(row.results or []), row.max_cost, row.cost


def _same(column, value):
    return column.is_(None) if value is None else column == value
