"""Row locks for read-then-write transactions, on both databases."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session


def take_sqlite_write_lock(session: Session, table, row_id: int) -> None:
    """Before a ``FOR UPDATE`` read on SQLite, which has no FOR UPDATE.

    Its driver starts a transaction only at the first write: until then each read sees
    whatever is committed at that moment, so two writers could both read "the run is
    running" (or "v1 is the newest version") and both act on it. A no-op write to the row
    first takes the database's write lock (waiting for the other writer to finish), and
    everything read after it in this transaction is what the other writer committed. On
    PostgreSQL (a real FOR UPDATE) nothing is done.
    """
    if session.get_bind().dialect.name != "sqlite":
        return
    session.execute(update(table).where(table.id == row_id).values(id=table.id))
