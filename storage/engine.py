"""Engines and session factories; SQLite gets WAL, foreign keys and a busy timeout."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from storage.config import database_url

SQLITE_BUSY_TIMEOUT_MS = 30_000

SessionFactory = sessionmaker[Session]
T = TypeVar("T")


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        _use_wal(cursor)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def _use_wal(cursor: Any) -> None:
    """Switch a database file to WAL once (the mode persists in the file).

    Switching needs an exclusive lock, and SQLite answers "database is locked" at once,
    without waiting on the busy timeout, when it cannot upgrade a lock it already holds: that
    happens when the app and a worker open a brand-new database together. Retry for a while.
    """
    if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
        return
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def retry_db(fn: Callable[..., T], *args: Any, seconds: float = 120.0) -> T:
    """``fn(*args)``, retried while the database is briefly unavailable (a PostgreSQL
    restart, a lock held past the busy timeout); the pool's pre-ping reconnects."""
    from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

    from storage.db_errors import is_storage_fault

    for attempt in Retrying(retry=retry_if_exception(is_storage_fault),
                            wait=wait_exponential(multiplier=0.2, max=5),
                            stop=stop_after_delay(seconds), reraise=True):
        with attempt:
            return fn(*args)
    raise AssertionError("unreachable")  # pragma: no cover


def create_db_engine(url: str | None = None, **kwargs: Any) -> Engine:
    """An engine for ``url`` (default: the configured database URL)."""
    url = url or database_url()
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        kwargs.setdefault("connect_args", {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _on_sqlite_connect)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def make_session_factory(engine: Engine) -> SessionFactory:
    # expire_on_commit=False: services convert rows to plain objects after commit.
    return sessionmaker(engine, expire_on_commit=False)


def open_database(url: str | None = None, *, migrate: bool = True) -> SessionFactory:
    """Start-up entry point: migrate the database to head (by default) and return sessions."""
    url = url or database_url()
    if migrate:
        from storage.migrate import upgrade_to_head

        upgrade_to_head(url)
    return make_session_factory(create_db_engine(url))
