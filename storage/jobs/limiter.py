"""The endpoint limiters of ``grading.limiter``, shared between worker processes.

The discovery itself (slow start, AIMD with a remembered refusal level, the delay signal) is
``grading.capacity``; every limiter of the process lives in ``grading.limiter``'s registry,
so the job runner and the library share them. Here, several processes on one endpoint (one
SQLite file on one machine, or PostgreSQL) share what they learn through the
``endpoint_capacity`` table, every ``SYNC_INTERVAL`` seconds:

- each process writes its limit, how many rounds of its calls were refused (its own 429s
  only: a decrease made for a peer is not published, or two processes would echo each
  other's decreases down to one call) and any Retry-After pause;
- a refusal seen by a peer backs the others off too (a tenth once per round; under ten
  calls, their limits stop where they are: ``CapacityEstimate.peer_refused``), so the
  processes back off together instead of each probing the provider into a storm of 429s;
- a peer's pause is kept by all;
- a process starting on an endpoint that a process which has stopped knew starts from that
  process's limit instead of slow-starting from scratch; one that finds a peer at work does
  not resume from what the last process on this machine held (``grading.capacity_memory``:
  the peer may be on another machine).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite

from grading.capacity import CapacityEstimate
from grading.limiter import (
    AdaptiveLimiter,
    LimiterStats,
    Slot,
    _registry,
    limiter_for,
    limiter_key,
)
from storage import models as m
from storage.engine import SessionFactory

__all__ = [
    "AdaptiveLimiter", "CapacitySharing", "LimiterStats", "Slot", "_registry", "endpoint_name",
    "limiter_for", "limiter_key",
]

SYNC_INTERVAL = 2.0
LIVE_SECONDS = 15.0  # a peer not seen for this long has stopped
REMEMBER_SECONDS = 600.0  # a stopped process's limit still seeds a new one this long
FORGET_SECONDS = 86_400.0


def endpoint_name(model: str, api_base: str | None) -> str:
    return "|".join(limiter_key(model, api_base))


@dataclass
class CapacitySharing:
    """One process's view of the other processes on one endpoint."""

    sessions: SessionFactory
    limiter: AdaptiveLimiter
    endpoint: str
    holder: str
    _peer_refusals: dict[str, int] = field(default_factory=dict)
    _synced: bool = False

    def sync(self, now: datetime | None = None) -> None:
        """Publish our state and take in the peers'. Blocking: call it from a thread."""
        now = now or m.utcnow()
        snapshot = self.limiter.snapshot()
        clock_now = self.limiter.clock()
        backoff = None
        if snapshot.paused_until > clock_now:
            backoff = now + timedelta(seconds=snapshot.paused_until - clock_now)
        with self.sessions.begin() as session:
            dialect = session.get_bind().dialect.name
            insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
            values = {"limit": snapshot.limit, "refusals": snapshot.refused_rounds,
                      "backoff_until": backoff, "seen_at": now}
            session.execute(
                insert(m.EndpointCapacityRow)
                .values(endpoint=self.endpoint, holder=self.holder, **values)
                .on_conflict_do_update(index_elements=["endpoint", "holder"], set_=values))
            peers = session.scalars(
                select(m.EndpointCapacityRow).where(
                    m.EndpointCapacityRow.endpoint == self.endpoint,
                    m.EndpointCapacityRow.holder != self.holder,
                    m.EndpointCapacityRow.seen_at > now - timedelta(seconds=REMEMBER_SECONDS))
            ).all()
            peers = [(p.holder, p.limit, p.refusals, p.backoff_until, p.seen_at) for p in peers]
            if not self._synced:
                session.execute(delete(m.EndpointCapacityRow).where(
                    m.EndpointCapacityRow.seen_at < now - timedelta(seconds=FORGET_SECONDS)))
        self._apply(peers, now)
        self._synced = True

    def _apply(self, peers: list[tuple[str, float, int, datetime | None, datetime]],
               now: datetime) -> None:
        live = [p for p in peers if p[4] > now - timedelta(seconds=LIVE_SECONDS)]
        refused = False
        for holder, _limit, refusals, _backoff, _seen in live:
            before = self._peer_refusals.get(holder)
            self._peer_refusals[holder] = refusals
            refused = refused or (before is not None and refusals > before)
        backoffs = [b for _h, _l, _r, b, _s in live if b is not None and b > now]
        stopped = sorted((p for p in peers if p not in live), key=lambda p: p[4])
        first = not self._synced

        def change(estimate: CapacityEstimate, clock_now: float) -> None:
            if first and live:
                estimate.abandon_resume()  # a peer holds the endpoint (on another machine)
            if first and not live and stopped:
                estimate.seed(stopped[-1][1])
            if refused:
                estimate.peer_refused(clock_now, round_time=estimate.short_latency or 1.0)
            if backoffs:
                estimate.pause_until(clock_now + (max(backoffs) - now).total_seconds())

        self.limiter.update(change)
