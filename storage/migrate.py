"""Apply the Alembic migrations from code (start-up and ``rubric-workbench db upgrade``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, text

from storage.config import database_url

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Arbitrary constant: serialises concurrent start-ups (app + workers) on one PostgreSQL.
_PG_LOCK_KEY = 724_513_901


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def upgrade_to_head(url: str | None = None) -> None:
    """Bring the database at ``url`` (default: the configured one) to the latest schema."""
    from storage.engine import create_db_engine

    engine = create_db_engine(url or database_url(), poolclass=_null_pool())
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


def current_revision(url: str | None = None) -> str | None:
    from alembic.runtime.migration import MigrationContext

    from storage.engine import create_db_engine

    engine = create_db_engine(url or database_url(), poolclass=_null_pool())
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def _null_pool() -> type:
    from sqlalchemy.pool import NullPool

    return NullPool
