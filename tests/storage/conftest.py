"""Storage tests run on a SQLite file and on a real PostgreSQL started here.

Each test gets a fresh database copied from a migrated template (a file copy on SQLite,
``CREATE DATABASE ... TEMPLATE`` on PostgreSQL), so migrations run once per session.
If PostgreSQL cannot start, the PostgreSQL tests fail with the reason; they never skip.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from storage.engine import SessionFactory, create_db_engine, make_session_factory
from storage.migrate import upgrade_to_head
from tests.storage import postgres_server

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
]
_TEMPLATE = "rw_template"
_counter = itertools.count()


@pytest.fixture(scope="session")
def _postgres() -> Iterator[postgres_server.PostgresServer | str]:
    try:
        server = postgres_server.start()
    except postgres_server.PostgresUnavailable as exc:
        yield f"PostgreSQL could not be started for the storage tests: {exc}"
        return
    try:
        yield server
    finally:
        server.stop()


def _admin(server: postgres_server.PostgresServer):
    return create_engine(server.url(), poolclass=NullPool, isolation_level="AUTOCOMMIT")


@pytest.fixture(scope="session")
def _templates(_postgres, tmp_path_factory) -> dict[str, object]:
    sqlite_template = tmp_path_factory.mktemp("template") / "template.db"
    upgrade_to_head(f"sqlite:///{sqlite_template}")
    templates: dict[str, object] = {"sqlite": sqlite_template, "postgresql": _postgres}
    if isinstance(_postgres, postgres_server.PostgresServer):
        engine = _admin(_postgres)
        with engine.connect() as connection:
            connection.execute(text(f"CREATE DATABASE {_TEMPLATE}"))
        engine.dispose()
        upgrade_to_head(_postgres.url(_TEMPLATE))
    return templates


def postgres_or_fail(server: object) -> postgres_server.PostgresServer:
    if isinstance(server, str):
        pytest.fail(server)
    return server


@pytest.fixture
def new_database(_postgres, tmp_path) -> Iterator:
    """A factory of empty, unmigrated databases: ``new_database(backend) -> url``."""
    created: list[str] = []

    def make(backend: str) -> str:
        if backend == "sqlite":
            return f"sqlite:///{tmp_path / f'empty{next(_counter)}.db'}"
        server = postgres_or_fail(_postgres)
        name = f"rw_empty_{next(_counter)}"
        engine = _admin(server)
        with engine.connect() as connection:
            connection.execute(text(f"CREATE DATABASE {name}"))
        engine.dispose()
        created.append(name)
        return server.url(name)

    yield make
    if created and isinstance(_postgres, postgres_server.PostgresServer):
        _drop(_postgres, created)


def _drop(server: postgres_server.PostgresServer, names: list[str]) -> None:
    engine = _admin(server)
    with engine.connect() as connection:
        for name in names:
            connection.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    engine.dispose()


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def db_url(backend, _templates, tmp_path) -> Iterator[str]:
    """A migrated, empty database on the parametrised backend."""
    if backend == "sqlite":
        path = Path(tmp_path) / "storage.db"
        shutil.copyfile(_templates["sqlite"], path)
        yield f"sqlite:///{path}"
        return
    server = postgres_or_fail(_templates["postgresql"])
    name = f"rw_test_{next(_counter)}"
    engine = _admin(server)
    with engine.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name} TEMPLATE {_TEMPLATE}"))
    engine.dispose()
    try:
        yield server.url(name)
    finally:
        _drop(server, [name])


@pytest.fixture
def sessions(db_url) -> Iterator[SessionFactory]:
    engine = create_db_engine(db_url)
    try:
        yield make_session_factory(engine)
    finally:
        engine.dispose()
