"""The schema comes from Alembic migrations, and the migrations match the models."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect
from sqlalchemy.pool import NullPool

from storage import cli
from storage.engine import open_database
from storage.migrate import current_revision, head_revision, upgrade_to_head
from storage.models import Base
from storage.search_index import outside_models
from storage.services import rubrics
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA


def _diffs(url: str) -> list:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"compare_type": True, "render_as_batch": True,
                                  "include_object": outside_models})
            return compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()


def test_empty_database_migrates_to_head_and_matches_the_models(backend, new_database):
    url = new_database(backend)
    assert current_revision(url) is None
    upgrade_to_head(url)
    assert current_revision(url) == head_revision()
    assert _diffs(url) == []
    tables = set(inspect(create_engine(url, poolclass=NullPool)).get_table_names())
    assert set(Base.metadata.tables) <= tables


def test_models_differ_from_an_unmigrated_database(backend, new_database):
    # Guards the check above: compare_metadata does see differences when there are some.
    assert _diffs(new_database(backend)) != []


def test_upgrade_is_idempotent_and_keeps_data(backend, new_database):
    url = new_database(backend)
    sessions = open_database(url)
    rubrics.create_rubric(sessions, "Kept", CRITERIA, actor=ADMIN)
    sessions.kw["bind"].dispose()
    upgrade_to_head(url)
    sessions = open_database(url)
    assert [r.name for r in rubrics.list_rubrics(sessions)] == ["Kept"]
    sessions.kw["bind"].dispose()


def test_db_upgrade_command_migrates_the_configured_database(backend, new_database, monkeypatch,
                                                             capsys):
    url = new_database(backend)
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATABASE_URL", url)
    assert cli.main(["db", "upgrade"]) == 0
    assert current_revision(url) == head_revision()
    assert f"schema revision {head_revision()}" in capsys.readouterr().out


def test_db_upgrade_command_reports_an_unreachable_database(capsys):
    status = cli.main(["db", "upgrade", "--db",
                       "postgresql+psycopg://postgres@127.0.0.1:1/nothing"])
    assert status == 1
    assert "cannot upgrade" in capsys.readouterr().err


def test_concurrent_start_ups_migrate_a_new_database_once(backend, new_database):
    """The app and workers may start together on a fresh database; all of them succeed."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    url = new_database(backend)
    barrier = threading.Barrier(4)

    def start(_i: int) -> str | None:
        barrier.wait()
        upgrade_to_head(url)
        return current_revision(url)

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(start, range(4))) == [head_revision()] * 4
    assert _diffs(url) == []
