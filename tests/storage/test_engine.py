"""Configuration, engine settings and column types on both backends."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text

from storage import config
from storage.engine import create_db_engine, open_database
from storage.migrate import current_revision, head_revision
from storage.services import rubrics
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA


def test_database_url_is_read_at_call_time(monkeypatch, tmp_path):
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATABASE_URL", "sqlite:///first.db")
    assert config.database_url() == "sqlite:///first.db"
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATABASE_URL", "postgresql+psycopg://u@127.0.0.1/x")
    assert config.database_url() == "postgresql+psycopg://u@127.0.0.1/x"


def test_default_database_is_a_sqlite_file_in_the_data_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("RUBRIC_WORKBENCH_DATABASE_URL")
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATA_DIR", str(tmp_path / "wb"))
    assert config.database_url() == f"sqlite:///{tmp_path / 'wb' / 'workbench.db'}"
    monkeypatch.delenv("RUBRIC_WORKBENCH_DATA_DIR")
    assert "rubric-workbench" in str(config.data_dir())


def test_open_database_creates_and_migrates_the_default_file(monkeypatch, tmp_path):
    monkeypatch.delenv("RUBRIC_WORKBENCH_DATABASE_URL")
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATA_DIR", str(tmp_path / "new" / "dir"))
    sessions = open_database()
    rubrics.create_rubric(sessions, "First", CRITERIA, actor=ADMIN)
    assert Path(tmp_path / "new" / "dir" / "workbench.db").is_file()
    assert current_revision() == head_revision()


def test_describe_url_hides_the_password():
    shown = config.describe_url("postgresql+psycopg://alice:s3cret@127.0.0.1:5432/wb")
    assert "s3cret" not in shown and "alice" in shown


def test_sqlite_runs_with_wal_foreign_keys_and_busy_timeout(tmp_path):
    engine = create_db_engine(f"sqlite:///{tmp_path / 'x.db'}")
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert connection.execute(text("PRAGMA busy_timeout")).scalar() == 30_000
    engine.dispose()


def test_timestamps_come_back_timezone_aware_utc(sessions):
    before = datetime.now(UTC)
    version = rubrics.create_rubric(sessions, "Timed", CRITERIA, actor=ADMIN)
    assert version.created_at.tzinfo is not None
    assert version.created_at.utcoffset().total_seconds() == 0
    assert before.replace(microsecond=0) <= version.created_at <= datetime.now(UTC)
    again = rubrics.get_version(sessions, version.id)
    assert again.created_at == version.created_at
