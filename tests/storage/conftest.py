"""Storage tests run on a SQLite file and on a real PostgreSQL started here.

Each test gets a fresh database copied from a migrated template (a file copy on SQLite,
``CREATE DATABASE ... TEMPLATE`` on PostgreSQL), so migrations run once per session.
If PostgreSQL cannot start, the PostgreSQL tests fail with the reason; they never skip.
"""

from __future__ import annotations

import copy
import itertools
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
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


_SESSIONS = object()  # stands for the test's sessions in a kept world's objects


@pytest.fixture(scope="session")
def _kept_worlds(_postgres, tmp_path_factory) -> Iterator[dict]:
    kept: dict = {}
    yield kept
    names = [where for (backend, _key), (where, _objects) in kept.items()
             if backend == "postgresql"]
    if names and isinstance(_postgres, postgres_server.PostgresServer):
        _drop(_postgres, names)


@pytest.fixture
def copied_world(backend, db_url, sessions, _kept_worlds, _postgres, tmp_path_factory):
    """``copied_world(key, build) -> what build(sessions) returned``, on the test's database.

    The first test that asks for ``key`` (on its backend) builds the world on its own fresh
    database; its database is then kept (SQLite's backup API into a file; ``CREATE DATABASE
    ... TEMPLATE`` on PostgreSQL) with a deep copy of the objects ``build`` returned. A later
    test asking for the same key gets its fresh database replaced by a copy of the kept one
    and its own deep copy of those objects (random generators in the state they were left
    in, ``sessions`` its own): exactly the state a build of its own would leave, for tests
    whose world is one seeded history. ``build`` must start from the empty database."""
    engine = sessions.kw["bind"]

    def pooled() -> None:
        """A connection left in the pool, as a build leaves it (tests count open files)."""
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    def world(key, build):
        found = _kept_worlds.get((backend, key))
        if found is None:
            objects = build(sessions)
            frozen = copy.deepcopy(objects, {id(sessions): _SESSIONS})
            engine.dispose()  # no connection open while PostgreSQL copies the database
            _kept_worlds[(backend, key)] = (
                _keep(backend, db_url, tmp_path_factory, _postgres), frozen)
            pooled()
            return objects
        where, frozen = found
        engine.dispose()
        _restore(backend, db_url, where, _postgres)
        pooled()
        return copy.deepcopy(frozen, {id(_SESSIONS): sessions})

    return world


def _keep(backend: str, url: str, tmp_path_factory, server: object) -> str:
    if backend == "sqlite":
        path = tmp_path_factory.mktemp("world") / "world.db"
        with closing(sqlite3.connect(make_url(url).database)) as source, \
                closing(sqlite3.connect(path)) as copy_:
            source.backup(copy_)
        return str(path)
    server = postgres_or_fail(server)
    name = f"rw_world_{next(_counter)}"
    engine = _admin(server)
    with engine.connect() as connection:
        connection.execute(text(
            f"CREATE DATABASE {name} TEMPLATE {make_url(url).database}"))
    engine.dispose()
    return name


def _restore(backend: str, url: str, where: str, server: object) -> None:
    if backend == "sqlite":
        with closing(sqlite3.connect(where)) as source, \
                closing(sqlite3.connect(make_url(url).database)) as target:
            source.backup(target)
        return
    server = postgres_or_fail(server)
    name = make_url(url).database
    engine = _admin(server)
    with engine.connect() as connection:
        connection.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
        connection.execute(text(f"CREATE DATABASE {name} TEMPLATE {where}"))
    engine.dispose()

