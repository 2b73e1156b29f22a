"""A run's status message: what its runner is waiting for right now (shown with its progress)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.dialects import postgresql, sqlite

from storage import models as m
from storage.engine import SessionFactory

# How a notice about a provider that does not answer begins (readers drop the ETA then).
UNREACHABLE = "provider unreachable since"


def unreachable(since: datetime, why: str, failed_calls: int, attempt: int, attempts: int,
                next_try: datetime | None = None) -> str:
    """"provider unreachable since 20:31:05 UTC (connection failed, 12 calls failed);
    retrying (attempt 2 of 4)": an attempt is a pass over what is still to grade (the
    first, then the retry passes, ``storage.jobs.passes``); ``next_try`` when it waits."""
    calls = f"{failed_calls} call{'s' if failed_calls != 1 else ''} failed"
    when = f" at {next_try:%H:%M:%S} UTC" if next_try is not None else ""
    return (f"{UNREACHABLE} {since:%H:%M:%S} UTC ({why}, {calls}); retrying "
            f"(attempt {attempt} of {attempts}){when}")


def queued(slots: int) -> str:
    """What a run says when its provider queues calls beyond ``slots`` at once (the limiter's
    queue signal, ``grading.capacity.queue``): the run is slower than the calls' count
    suggests because the server, not the app, takes them one (or a few) at a time."""
    at_once = "one call" if slots == 1 else f"{slots} calls"
    return (f"the server answers {at_once} at a time: calls are sent {slots} at a time "
            "so that none waits in its queue")


def is_outage(notice: str | None) -> bool:
    return bool(notice) and notice.startswith(UNREACHABLE)


def get_notice(sessions: SessionFactory, run_id: int) -> str | None:
    with sessions() as session:
        stats = session.get(m.RunJobStatsRow, run_id)
        return stats.notice if stats is not None else None


def set_notice(sessions: SessionFactory, run_id: int, notice: str | None) -> None:
    with sessions.begin() as session:
        insert = (postgresql.insert if session.get_bind().dialect.name == "postgresql"
                  else sqlite.insert)
        statement = insert(m.RunJobStatsRow).values(run_id=run_id, provider_calls=0,
                                                   cache_hits=0, rate_limited=0, notice=notice)
        session.execute(statement.on_conflict_do_update(
            index_elements=[m.RunJobStatsRow.run_id], set_={"notice": notice}))
