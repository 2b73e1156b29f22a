"""Apply the Alembic migrations from code (start-up and ``rubric-workbench db upgrade``)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from storage.config import database_url
from storage.errors import StorageError

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Arbitrary constant: serialises concurrent start-ups (app + workers) on one PostgreSQL.
_PG_LOCK_KEY = 724_513_901
# Alembic's ``context`` is a module global: migrations in one process must not overlap.
_THREAD_LOCK = threading.Lock()


class HalfUpgradedDatabaseError(StorageError):
    """An older release's interrupted upgrade left the SQLite file between two revisions."""


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
    engine = migration_engine(url)
    try:
        with engine.connect() as connection:
            postgres = connection.dialect.name == "postgresql"
            if postgres:
                connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _PG_LOCK_KEY})
                connection.commit()
            try:
                if not postgres:
                    refuse_half_upgraded(connection)
                _upgrade_on(connection, sqlite=not postgres)
            finally:
                if postgres:
                    connection.execute(
                        text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_LOCK_KEY}
                    )
                    connection.commit()
    finally:
        engine.dispose()


def migration_engine(url: str) -> Engine:
    """An engine whose transactions really enclose DDL, so an upgrade is all or nothing.

    Python's sqlite3 driver (in its legacy transaction mode) only opens a transaction before
    INSERT/UPDATE/DELETE: a CREATE, DROP or ALTER before the first of them commits on its own.
    A killed upgrade then left half of a revision's tables behind, and every later upgrade
    failed with "table ... already exists". Here the driver is left in autocommit and the
    engine opens the transaction itself (SQLAlchemy's recipe for SQLite transactional DDL).
    """
    from storage.engine import create_db_engine

    engine = create_db_engine(url, poolclass=_null_pool())
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _driver_autocommit)
        # Off while the schema changes (SQLite's own advice): a table that others reference
        # cannot be recreated (batch mode) with them on, since dropping the old copy counts as
        # deleting every row. ``_upgrade_on`` checks every reference before it commits.
        event.listen(engine, "connect", _foreign_keys_off)
        # IMMEDIATE: take the write lock (waiting out the busy timeout) before reading the
        # schema, instead of failing at the first write when the app wrote in between.
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
    return engine


def _driver_autocommit(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None


def _foreign_keys_off(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute("PRAGMA foreign_keys=OFF")


def refuse_half_upgraded(connection: Connection) -> None:
    """Refuse, with what to do, a SQLite file that an interrupted upgrade of an older release
    left between two revisions (their DDL was not transactional, see ``migration_engine``)."""
    names = set(inspect(connection).get_table_names())
    leftovers = sorted(name for name in names if name.startswith("_alembic_tmp_"))
    if leftovers:
        raise HalfUpgradedDatabaseError(
            _half_upgraded_message(connection, f"it holds the temporary table {leftovers[0]}"))


def _half_upgraded_message(connection: Connection, evidence: str) -> str:
    from alembic.runtime.migration import MigrationContext

    revision = MigrationContext.configure(connection).get_current_revision()
    return (
        f"the database was left half-upgraded by an interrupted upgrade of an older release "
        f"(its schema revision says {revision or 'empty'}, but {evidence}). Upgrading it "
        "further could lose data: restore the file from a copy made before that upgrade, "
        "then run `rubric-workbench db upgrade` again (upgrades are now all or nothing)."
    )


def _upgrade_on(connection: Connection, *, sqlite: bool) -> None:
    try:
        command.upgrade(alembic_config(connection), "head")
    except OperationalError as exc:
        cause = str(exc.orig)
        if not sqlite or not ("already exists" in cause or "duplicate column" in cause):
            raise
        connection.rollback()
        raise HalfUpgradedDatabaseError(_half_upgraded_message(
            connection, f"a later revision's change is already there: {cause}")) from None
    if sqlite:
        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
        if broken:
            connection.rollback()
            raise RuntimeError(
                f"the upgrade would leave {len(broken)} rows pointing at rows that do not "
                f"exist (first: table {broken[0][0]}, row {broken[0][1]}, to {broken[0][2]}); "
                "nothing was changed. Please report this with the database file.")
    connection.commit()


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
