"""What the command line says to a person: ``--db`` takes a URL or an SQLite file path (the
first thing people type), a bad value is one sentence and never a traceback or the password,
and library warnings (fields a rubric file had that the rubric does not use) are one plain line.

Run as real processes: the CLI's warning display is process-wide."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from storage.config import DatabaseUrlError, as_database_url

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RUBRIC_WORKBENCH_API_KEY": "test-key",
           **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "storage.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_file_path_is_an_sqlite_database(tmp_path):
    assert as_database_url("runs/w.db") == f"sqlite:///{Path('runs/w.db').resolve()}"
    assert as_database_url("~/w.db") == f"sqlite:///{Path('~/w.db').expanduser().resolve()}"
    assert as_database_url(" sqlite:///x.db ") == "sqlite:///x.db"
    assert as_database_url("postgresql+psycopg://u:p@h/db") == "postgresql+psycopg://u:p@h/db"


@pytest.mark.parametrize("value", ["", "   ", "postgresql+psycopg://user:s3cret@host:notaport/db"])
def test_a_value_that_is_no_database_says_what_to_give_without_repeating_it(value):
    with pytest.raises(DatabaseUrlError) as caught:
        as_database_url(value, where="RUBRIC_WORKBENCH_DATABASE_URL")
    message = str(caught.value)
    assert message.startswith("RUBRIC_WORKBENCH_DATABASE_URL is ")
    assert "sqlite:///path/to/file.db" in message and "path of an SQLite file" in message
    assert "s3cret" not in message


def test_db_upgrade_with_a_plain_file_path_creates_that_sqlite_file(tmp_path):
    done = _cli("db", "upgrade", "--db", "team.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    with sqlite3.connect(tmp_path / "team.db") as connection:
        assert connection.execute("select version_num from alembic_version").fetchone()


def test_a_bad_db_value_is_one_line_with_no_traceback_and_no_password(tmp_path):
    done = _cli("db", "upgrade", "--db", "postgresql://me:s3cret@db:port/x", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "s3cret" not in done.stderr
    assert "argument --db: is not a database URL; give a database URL" in done.stderr


def test_a_bad_database_variable_is_one_line_too(tmp_path):
    done = _cli("db", "upgrade", cwd=tmp_path,
                extra_env={"RUBRIC_WORKBENCH_DATABASE_URL": "mysql://me:s3cret@h:port/x"})
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "s3cret" not in done.stderr
    assert "RUBRIC_WORKBENCH_DATABASE_URL is not a database URL" in done.stderr


def test_ignored_rubric_fields_are_one_plain_warning_line(tmp_path, fake_provider):
    (tmp_path / "rubric.yaml").write_text(
        "- {name: accurate, weight: 10, requirement: States the dose, id: c-17}\n")
    (tmp_path / "answers.jsonl").write_text('{"id": "a", "text": "Take 5 mg."}\n')
    done = _cli("grade", "--rubric", "rubric.yaml", "--responses", "answers.jsonl",
                "--grader", "per-criterion", "--model", "openai/fake-judge",
                "--api-base", fake_provider.api_base, "--db", "w.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [line] = [ln for ln in done.stderr.splitlines() if "were ignored" in ln]
    assert line.startswith("warning: rubric.yaml: fields not used by the rubric were ignored")
    assert line.endswith("criterion 1 ('accurate') at line 1: 'id'")
    assert "rubric_io.py" not in done.stderr and "Traceback" not in done.stderr
