"""Apply the Alembic migrations from code (start-up and ``rubric-workbench db upgrade``)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url

from storage.config import database_url

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Arbitrary constant: serialises concurrent start-ups (app + workers) on one PostgreSQL.
_PG_LOCK_KEY = 724_513_901
# Alembic's ``context`` is a module global: migrations in one process must not overlap.
_THREAD_LOCK = threading.Lock()


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def upgrade_to_head(url: str | None = None) -> None:
    """Bring the database at ``url`` (default: the configured one) to the latest schema.

    Safe when the app and workers start together: processes serialise on a PostgreSQL
    advisory lock, or on a lock file next to a SQLite database.
    """
    url = url or database_url()
    if current_revision(url) == head_revision():
        return
    with _THREAD_LOCK, _sqlite_file_lock(url):
        _upgrade(url)


def _upgrade(url: str) -> None:
    from storage.engine import create_db_engine

    engine = create_db_engine(url, poolclass=_null_pool())
    try:
        with engine.connect() as connection:
            postgres = connection.dialect.name == "postgresql"
            if postgres:
                connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _PG_LOCK_KEY})
                connection.commit()
            try:
                command.upgrade(alembic_config(connection), "head")
                connection.commit()
            finally:
                if postgres:
                    connection.execute(
                        text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_LOCK_KEY}
                    )
                    connection.commit()
    finally:
        engine.dispose()


@contextmanager
def _sqlite_file_lock(url: str) -> Iterator[None]:
    """An exclusive OS lock on ``<database>.migrate-lock`` for SQLite files; else nothing."""
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:" \
            or database.startswith("file:"):
        yield
        return
    path = Path(database).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.migrate-lock", "a+b") as handle:
        if os.name == "nt":  # pragma: no cover - Windows
            import msvcrt

            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
        else:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if os.name == "nt":  # pragma: no cover - Windows
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
            else:
                fcntl.flock(handle, fcntl.LOCK_UN)


def current_revision(url: str | None = None) -> str | None:
    from alembic.runtime.migration import MigrationContext

    from storage.engine import create_db_engine

    engine = create_db_engine(url or database_url(), poolclass=_null_pool())
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


@functools.cache  # the migration scripts do not change while a process runs
def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def _null_pool() -> type:
    from sqlalchemy.pool import NullPool

    return NullPool
