"""A run's progress, read from the database at any time (by the UI, the CLI, anyone)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select

from storage import models as m
from storage.convert import run_info
from storage.dto import RunInfo, run_status_words
from storage.engine import SessionFactory
from storage.jobs.notices import is_outage
from storage.repositories import runs as run_repo

RATE_WINDOW_SECONDS = 60.0


@dataclass(frozen=True)
class RunProgress:
    run_id: int
    status: str
    error: str | None
    total: int
    done: int  # graded with a score
    failed: int  # graded without one (score None + error)
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float | None  # None while any grade's cost is unknown (no price for the model)
    known_cost: float  # the sum of the known costs
    unknown_cost_count: int
    provider_calls: int
    cache_hits: int
    rate_limited: int
    rate_per_s: float | None  # grades per second over the last minute
    eta_s: float | None
    started_at: datetime | None
    finished_at: datetime | None
    claimed_by: str | None
    heartbeat_at: datetime | None
    notice: str | None = None  # what the runner waits for now (Retry-After, a full disk)

    @property
    def graded(self) -> int:
        """Responses with a stored grade, failed or not (what is no longer pending)."""
        return self.done + self.failed

    @property
    def pending(self) -> int:
        return max(0, self.total - self.graded)

    @property
    def fraction(self) -> float:
        """The share graded with a score: a failure is not progress."""
        return self.done / self.total if self.total else 1.0

    @property
    def outage(self) -> bool:
        """The provider does not answer (the notice says since when): no ETA holds then."""
        return is_outage(self.notice)

    @property
    def status_words(self) -> str:
        return run_status_words(self.status, self.failed, self.error)

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed", "cancelled")


def run_progress(sessions: SessionFactory, run_id: int, *,
                 seen: RunInfo | None = None) -> RunProgress:
    """Counts, tokens, cost, cache hits, rate and ETA of one run (a few cheap queries).

    ``seen``: the run as the caller already read it; its counts are used, so a page that
    shows the run twice (a card and a table) shows one set of numbers, not two moments'.
    """
    now = m.utcnow()
    with sessions() as session:
        run = seen if seen is not None else run_info(run_repo.get_run(session, run_id))
        stats = session.get(m.RunJobStatsRow, run_id)
        since = now - timedelta(seconds=RATE_WINDOW_SECONDS)
        recent = session.scalar(
            select(func.count())
            .where(m.GradeRow.run_id == run_id, m.GradeRow.created_at >= since)
        ) or 0
    rate = eta = None
    pending = max(0, run.response_count - run.graded_count)
    notice = stats.notice if stats and run.status == "running" else None
    if is_outage(notice):  # grades only fail while the provider is away: no rate, no ETA
        run_is_moving = False
    else:
        run_is_moving = run.status == "running"
    if recent and run_is_moving:
        start = max(since, run.started_at or since)
        elapsed = (now - start).total_seconds()
        rate = recent / elapsed if elapsed > 0 else None
        eta = pending / rate if rate else None
    elif run_is_moving and pending == 0:
        eta = 0.0
    return RunProgress(
        run_id=run.id, status=run.status, error=run.error, total=run.response_count,
        done=run.done_count, failed=run.failed_count, prompt_tokens=run.prompt_tokens,
        completion_tokens=run.completion_tokens, total_tokens=run.total_tokens,
        cost=None if run.unknown_cost_count else run.cost, known_cost=run.cost,
        unknown_cost_count=run.unknown_cost_count,
        provider_calls=stats.provider_calls if stats else 0,
        cache_hits=stats.cache_hits if stats else 0,
        rate_limited=stats.rate_limited if stats else 0,
        rate_per_s=rate, eta_s=eta, started_at=run.started_at, finished_at=run.finished_at,
        claimed_by=run.claimed_by, heartbeat_at=run.heartbeat_at,
        notice=notice,
    )
