"""A run's status message: what its runner is waiting for right now (shown with its progress)."""

from __future__ import annotations

from sqlalchemy.dialects import postgresql, sqlite

from storage import models as m
from storage.engine import SessionFactory


def set_notice(sessions: SessionFactory, run_id: int, notice: str | None) -> None:
    with sessions.begin() as session:
        insert = (postgresql.insert if session.get_bind().dialect.name == "postgresql"
                  else sqlite.insert)
        statement = insert(m.RunJobStatsRow).values(run_id=run_id, provider_calls=0,
                                                   cache_hits=0, rate_limited=0, notice=notice)
        session.execute(statement.on_conflict_do_update(
            index_elements=[m.RunJobStatsRow.run_id], set_={"notice": notice}))
