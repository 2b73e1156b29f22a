"""Alembic environment: runs on the connection handed over by storage.migrate."""

from __future__ import annotations

from alembic import context

from storage.models import Base
from storage.search_index import outside_models

target_metadata = Base.metadata


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things: batch mode recreates the table instead.
        render_as_batch=True,
        compare_type=True,
        include_object=outside_models,  # the search index is the migrations' alone
        # The SQLite engine of storage.migrate.migration_engine really encloses DDL in its
        # transaction: the whole upgrade commits or nothing does (alembic assumes otherwise).
        transactional_ddl=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if not url:
        from storage.config import database_url

        url = database_url()
    from storage.migrate import migration_engine

    engine = migration_engine(url)
    try:
        with engine.connect() as connection:
            _run(connection)
            connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported; run them online")
run_migrations_online()
