"""Issue 40.12: agreement, panel and import-verdicts on a database they cannot use say so in
one sentence, never with a traceback."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from storage import cli
from storage.engine import open_database
from tests.storage.tmpfs import small_tmpfs

UNREACHABLE = "postgresql+psycopg://postgres@127.0.0.1:1/nothing"


def _commands(db: str, tmp_path: Path) -> list[list[str]]:
    sheet = tmp_path / "verdicts.csv"
    sheet.write_text("response_id,criterion,verdict\nr1,1,MET\n", encoding="utf-8")
    return [
        ["agreement", "--db", db, "--dataset", "d", "--rubric", "r"],
        ["panel", "--db", db, "list"],
        ["panel", "--db", db, "create", "--rule", "majority", "--run", "1", "--run", "2"],
        ["import-verdicts", "--db", db, "--dataset", "d", "--rubric", "r", str(sheet)],
    ]


def _assert_one_sentence(argv: list[str], capsys, *words: str) -> None:
    status = cli.main(argv)
    err = capsys.readouterr().err
    assert status != 0, argv
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (argv, err)
    for word in words:
        assert word in err, (argv, err)


def test_an_unreachable_database_is_one_sentence(tmp_path, capsys):
    for argv in _commands(UNREACHABLE, tmp_path):
        _assert_one_sentence(argv, capsys, "cannot be used", "127.0.0.1:1")


@pytest.fixture
def read_only_database(tmp_path) -> Iterator[str]:
    """A migrated SQLite file on a filesystem mounted read-only (root ignores file modes)."""
    with small_tmpfs(tmp_path / "ro", "8m") as disk:
        url = f"sqlite:///{disk / 'workbench.db'}"
        open_database(url).kw["bind"].dispose()
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        yield url


def test_a_read_only_database_is_one_sentence(read_only_database, tmp_path, capsys):
    for argv in _commands(read_only_database, tmp_path):
        _assert_one_sentence(argv, capsys, "cannot be used")


@pytest.fixture
def held_write_lock(tmp_path, monkeypatch) -> Iterator[tuple[str, list[int]]]:
    """A migrated SQLite file with two runs, whose write lock another connection holds
    (BEGIN IMMEDIATE, as a writer in the middle of its transaction). The busy timeout is
    shortened so the command gives up after 0.5 s instead of 30 s."""
    import sqlite3

    from storage import engine as engine_module
    from storage.services import datasets
    from tests.actors import ADMIN
    from tests.storage.helpers import make_rubric, make_run

    path = tmp_path / "locked.db"
    url = f"sqlite:///{path}"
    sessions = open_database(url)
    version = make_rubric(sessions)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[{"id": "r0", "text": "a"}],
                                      actor=ADMIN)
    run_ids = [make_run(sessions, version.id, dataset.id).id for _ in range(2)]
    sessions.kw["bind"].dispose()
    monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 500)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield url, run_ids
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_panel_create_while_sqlite_is_locked_is_one_sentence(held_write_lock, capsys):
    url, run_ids = held_write_lock
    argv = ["panel", "--db", url, "create", "--rule", "majority",
            "--run", str(run_ids[0]), "--run", str(run_ids[1])]
    _assert_one_sentence(argv, capsys, "cannot be used", "locked by another process",
                         "nothing was changed — run the same command again")
    sessions = open_database(url)
    try:
        from storage.services import panels

        assert panels.list_panels(sessions) == []  # nothing half-made
    finally:
        sessions.kw["bind"].dispose()


def test_a_verdict_import_that_fills_the_disk_is_one_sentence_and_writes_nothing(
        tmp_path, capsys):
    """The database on a small real filesystem that the import's verdicts fill up."""
    from sqlalchemy import func, select

    from storage import models as m
    from tests.storage.helpers import make_dataset, make_rubric

    with small_tmpfs(tmp_path / "disk", "2m") as disk:
        url = f"sqlite:///{disk / 'workbench.db'}"
        sessions = open_database(url)
        make_rubric(sessions)
        make_dataset(sessions, count=500)
        sheet = tmp_path / "sheet.csv"
        with sheet.open("w", encoding="utf-8") as handle:
            handle.write("response_id,criterion,verdict,reviewer,note\n")
            for i in range(500):
                for criterion in ("accurate", "cites", "concise", "harmful"):
                    handle.write(f"r{i},{criterion},MET,ann,{'a long note ' * 150}\n")
        status = cli.main(["import-verdicts", "--db", url, "--rubric", "Dosing",
                           "--dataset", "Answers", "--create-reviewers", str(sheet)])
        err = capsys.readouterr().err
        with sessions() as session:
            written = session.scalar(select(func.count()).select_from(m.HumanVerdictRow))
        sessions.kw["bind"].dispose()
    assert status != 0
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert ("the disk holding the database is full; nothing was saved — free some disk space, "
            "then try again") in err, err
    assert written == 0
