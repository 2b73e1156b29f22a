"""The job runner and the CLI under real faults: a misbehaving provider, a disk that fills up,
a PostgreSQL restart, a read-only database, kill -9 and the same command again."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from storage import cli
from storage import models as m
from storage.engine import create_db_engine, make_session_factory
from storage.exports import write_results
from storage.jobs import chunks as chunk_store
from storage.jobs.progress import run_progress
from storage.services import runs
from storage.services.reviewers import command_line_actor
from tests.fake_provider import Reply
from tests.fault_provider import Fault, fault_provider, fault_provider_server, wait_until
from tests.jobs.helpers import (
    RUBRIC_YAML,
    answers_per_response,
    cli_command,
    in_thread,
    make_dataset,
    make_rubric,
    make_run,
    run_now,
)

__all__ = ["fault_provider", "fault_provider_server"]


@pytest.fixture
def fault(fault_provider):
    """The shared fault provider, with a clean script and counters for this test."""
    return fault_provider


@contextlib.contextmanager
def small_filesystem(size: str):
    """A real filesystem of ``size`` (tmpfs: needs root, as on CI)."""
    if os.geteuid() != 0:
        pytest.fail("mounting a small filesystem needs root (CI and scripts/test.sh run as root)")
    root = Path(os.environ.get("TMPDIR", "/tmp"))
    directory = root / f"rw-smallfs-{os.getpid()}-{time.time_ns()}"
    directory.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                   check=True)
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)
        shutil.rmtree(directory, ignore_errors=True)


def fill(directory: Path) -> Path:
    """Fill the filesystem to the last byte."""
    filler = directory / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for block in (b"\0" * 65536, b"\0" * 512, b"\0"):
            with contextlib.suppress(OSError):
                while True:
                    os.write(descriptor, block)
    finally:
        os.close(descriptor)
    return filler


def graded(sessions, run_id: int) -> int:
    return runs.get_run(sessions, run_id).graded_count


# -- 10.10: errors that are not errors of the grade ----------------------------------------------
def test_an_unknown_provider_fails_the_run_at_once(sessions, fault):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 20)
    run = make_run(sessions, version.id, dataset.id, fault.api_base, model="nosuchprovider/x")

    result = run_now(sessions, run.id)

    assert result.status == "failed"
    assert "provider/model" in result.error and "nosuchprovider/x" in result.error
    assert runs.list_grades(sessions, run.id) == [] and fault.requests == 0


def test_empty_choices_are_retried_not_stored_as_a_crash(sessions, fault):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 3)
    fault.enqueue(Fault(kind="empty_choices"), Fault(kind="empty_choices"))
    run = make_run(sessions, version.id, dataset.id, fault.api_base)

    result = run_now(sessions, run.id)

    assert (result.status, result.graded, result.failed) == ("done", 3, 0)
    assert fault.requests == 3 * 3 + 2


# -- 10.1: the provider's own key, echoed back, never reaches storage or exports ----------------
def test_an_echoed_provider_key_is_not_stored_or_exported(sessions, fault, monkeypatch):
    monkeypatch.delenv("RUBRIC_WORKBENCH_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-LEAKY-0123456789abcdef")
    fault.always(Fault(kind="echo_auth", status=400))
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    run = make_run(sessions, version.id, dataset.id, fault.api_base)

    run_now(sessions, run.id)

    assert fault.headers_seen[0]["authorization"].endswith("LEAKY-0123456789abcdef")
    grades = runs.list_grades(sessions, run.id)
    stored = " ".join([g.error or "" for g in grades]
                      + [c.error or "" for g in grades for c in g.criteria])
    assert "received headers" in stored and "LEAKY" not in stored
    for fmt in ("jsonl", "csv"):
        out = io.StringIO()
        write_results(sessions, [run.id], out, fmt)
        assert "LEAKY" not in out.getvalue()


# -- 10.5: an absurd Retry-After is capped and shown -------------------------------------------
def test_retry_after_infinity_is_capped_and_the_wait_is_shown(sessions, fault, monkeypatch):
    import grading.retry

    monkeypatch.setattr(grading.retry, "MAX_RETRY_AFTER", 3.0)
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    fault.enqueue(Reply(status=429, headers={"Retry-After": "inf"}))
    run = make_run(sessions, version.id, dataset.id, fault.api_base, concurrency=1)
    started = time.monotonic()

    thread, box = in_thread(run_now, sessions, run.id, heartbeat_interval=0.1)
    shown = wait_until(lambda: "asked to wait 3 s" in (run_progress(sessions, run.id).notice
                                                        or ""), timeout=20)
    thread.join(60)

    assert shown
    assert box["result"].status == "done", box
    assert time.monotonic() - started < 30  # for ever before
    assert run_progress(sessions, run.id).notice is None


# -- 10.6: a full disk pauses the run; nothing paid for is asked twice -------------------------
@pytest.mark.parametrize("chunk_size", [None, 1], ids=["chunks-of-25", "chunks-of-1"])
def test_a_full_disk_pauses_the_run_and_resumes_without_paying_twice(fault, _templates,
                                                                     chunk_size, monkeypatch):
    # Chunks of one response: the full disk is met by a chunk's claim or finish as often as by
    # a grade's write (the chunk bookkeeping failed the run instead of pausing it).
    if chunk_size is not None:
        monkeypatch.setattr(chunk_store, "CHUNK_SIZE", chunk_size)
    with small_filesystem("8m") as disk:
        shutil.copyfile(_templates["sqlite"], disk / "run.db")
        engine = create_db_engine(f"sqlite:///{disk / 'run.db'}")
        sessions = make_session_factory(engine)
        version = make_rubric(sessions)
        dataset, _ = make_dataset(sessions, 60)
        fault.latency = 0.03
        run = make_run(sessions, version.id, dataset.id, fault.api_base, concurrency=4)

        thread, box = in_thread(run_now, sessions, run.id, heartbeat_interval=0.2)
        assert wait_until(lambda: graded(sessions, run.id) >= 5, timeout=60)
        filler = fill(disk)
        time.sleep(3)
        calls_while_full = fault.requests
        time.sleep(3)
        assert fault.requests - calls_while_full <= 4  # no new calls while full (<= in flight)
        assert thread.is_alive() and "error" not in box  # paused, not failed
        filler.unlink()
        thread.join(120)
        engine.dispose()
        engine = create_db_engine(f"sqlite:///{disk / 'run.db'}")
        sessions = make_session_factory(engine)
        result = box["result"]
        stored = runs.get_run(sessions, run.id)
        engine.dispose()

    assert result.status == "done", result
    assert (stored.graded_count, stored.failed_count) == (60, 0)
    assert set(answers_per_response(fault.bodies).values()) == {3}  # each criterion asked once


# -- 10.10 / 10.11: a PostgreSQL restart mid-run ----------------------------------------------
@pytest.mark.parametrize("backend", [pytest.param("postgresql", marks=pytest.mark.postgres)],
                         indirect=True)
def test_a_postgresql_restart_mid_run_pauses_and_continues(sessions, fault, _postgres):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 40)
    fault.latency = 0.05
    run = make_run(sessions, version.id, dataset.id, fault.api_base, concurrency=4)

    thread, box = in_thread(run_now, sessions, run.id, heartbeat_interval=0.2)
    assert wait_until(lambda: graded(sessions, run.id) >= 5, timeout=60)
    data = str(_postgres.directory / "data")
    # fast: a clean restart (the test server runs with synchronous_commit=off, so a crash
    # could lose acknowledged commits). The server must not hold our pipes.
    log = str(_postgres.directory / "server.log")
    subprocess.run([*_postgres.as_postgres, _postgres.pg_ctl, "restart", "-D", data, "-m",
                    "fast", "-w", "-t", "60", "-l", log], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=90)
    thread.join(120)

    result = box.get("result")
    assert result is not None and result.status == "done", box
    stored = runs.get_run(sessions, run.id)
    assert (stored.graded_count, stored.failed_count) == (40, 0)
    assert set(answers_per_response(fault.bodies).values()) == {3}  # each criterion asked once


# -- 10.11: a read-only database in the CLI ---------------------------------------------------
def _read_only_setup(tmp_path: Path, fault) -> tuple[list[str], Path, Path]:
    """A rubric, one response and the grade command's arguments; ``data`` holds the database,
    ``view`` is where the read-only mount of it goes."""
    (tmp_path / "rubric.yaml").write_text(RUBRIC_YAML)
    (tmp_path / "r.csv").write_text("id,text\na,one\n")
    data, view = tmp_path / "data", tmp_path / "view"
    data.mkdir()
    view.mkdir()
    args = ["grade", "--rubric", str(tmp_path / "rubric.yaml"), "--responses",
            str(tmp_path / "r.csv"), "--grader", "per-criterion", "--model",
            "openai/fake-judge", "--api-base", fault.api_base]
    return args, data, view


def test_a_read_only_database_is_named_without_a_traceback(tmp_path, fault, capsys):
    args, data, view = _read_only_setup(tmp_path, fault)
    assert cli.main([*args, "--db", f"sqlite:///{data / 'ro.db'}"]) == 0
    capsys.readouterr()
    # The same file seen through a read-only mount (root ignores file permissions).
    subprocess.run(["mount", "--bind", str(data), str(view)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
        db = f"sqlite:///{view / 'ro.db'}"
        (tmp_path / "r.csv").write_text("id,text\nb,two\n")  # new responses: writes needed
        codes = [cli.main([*args, "--db", db]), cli.main(["export", "--run", "1", "--db", db]),
                 cli.main(["worker", "--db", db, "--until-idle"])]
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)
    err = capsys.readouterr().err
    assert codes[0] == 1 and codes[2] == 1, (codes, err)
    assert "read-only" in err and str(view / "ro.db") in err
    assert "Traceback" not in err and "[SQL" not in err


def test_a_read_only_database_with_no_wal_files_left_is_named_read_only(tmp_path, fault,
                                                                          capsys):
    # The database closed cleanly (SQLite removed its -wal and -shm files): on a read-only
    # mount SQLite then cannot even open it ("unable to open database file"), which is the
    # same fault as a refused write and is named so.
    args, data, view = _read_only_setup(tmp_path, fault)
    made = tmp_path / "made"
    made.mkdir()
    assert cli.main([*args, "--db", f"sqlite:///{made / 'ro.db'}"]) == 0
    capsys.readouterr()
    # A copy closed by its only connection: a WAL-mode file with no -wal / -shm beside it
    # (the command's own connections may still be open in this process).
    with contextlib.closing(sqlite3.connect(made / "ro.db")) as source, \
            contextlib.closing(sqlite3.connect(data / "ro.db")) as copy:
        source.backup(copy)
    assert [f.name for f in data.iterdir()] == ["ro.db"]
    with contextlib.closing(sqlite3.connect(data / "ro.db")) as check:
        assert check.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert [f.name for f in data.iterdir()] == ["ro.db"]
    subprocess.run(["mount", "--bind", str(data), str(view)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
        (tmp_path / "r.csv").write_text("id,text\nb,two\n")
        code = cli.main([*args, "--db", f"sqlite:///{view / 'ro.db'}"])
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)
    err = capsys.readouterr().err
    assert code == 1, err
    assert "the database is read-only" in err and str(view / "ro.db") in err, err
    assert "make the file and its folder writable" in err
    assert "Traceback" not in err and "[SQL" not in err


# -- 10.7: kill -9, then the same command ------------------------------------------------------
def test_the_same_command_after_kill_9_resumes_the_same_run(tmp_path, fault):
    (tmp_path / "rubric.yaml").write_text(RUBRIC_YAML)
    (tmp_path / "r.csv").write_text("id,text\n" + "".join(
        f"r{i},answer number {i}\n" for i in range(40)))
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    command = cli_command("grade", "--rubric", str(tmp_path / "rubric.yaml"), "--responses",
                   str(tmp_path / "r.csv"), "--grader", "per-criterion", "--model",
                   "openai/fake-judge", "--api-base", fault.api_base, "--db", db,
                   "--concurrency", "4")
    env = {**os.environ, "RUBRIC_WORKBENCH_API_KEY": "k"}
    fault.latency = 0.1
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    engine = create_db_engine(db)
    sessions = make_session_factory(engine)

    def stored() -> int:
        with contextlib.suppress(Exception), sessions() as session:
            return session.scalar(select(func.count()).select_from(m.GradeRow)) or 0
        return 0

    assert wait_until(lambda: stored() >= 8, timeout=90)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(10)
    with sessions() as session:  # what the killed process left behind
        cached = session.scalar(select(func.count()).select_from(m.ProviderCacheRow))
    graded_before = stored()
    asked_before = fault.requests

    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)

    assert second.returncode == 0, second.stderr
    assert "resuming run(s) 1" in second.stderr
    with sessions() as session:
        datasets = session.scalar(select(func.count()).select_from(m.DatasetRow))
        run_rows = session.scalars(select(m.RunRow)).all()
    engine.dispose()
    assert datasets == 1 and [(r.id, r.status) for r in run_rows] == [(1, "done")]
    # No grade is stored ahead of its answers: two criteria, two cached answers per grade.
    assert graded_before >= 8 and cached >= 2 * graded_before
    assert fault.requests <= 2 * 40 + 8  # at most the calls in flight at the kill again
    assert fault.requests > asked_before


# -- 10.17: a worker is quiet by default -------------------------------------------------------
def test_a_worker_logs_no_line_per_provider_call(tmp_path, fault, sessions, db_url):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 10)
    make_run(sessions, version.id, dataset.id, fault.api_base)
    env = {**os.environ, "RUBRIC_WORKBENCH_API_KEY": "k", "LITELLM_LOG": "ERROR"}

    done = subprocess.run(cli_command("worker", "--db", db_url, "--until-idle"), env=env,
                          capture_output=True, text=True, timeout=180)

    assert done.returncode == 0, done.stderr
    assert fault.requests == 30
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) < 10, "\n".join(lines)


# -- 10.1: credentials inside an api_base are never stored --------------------------------------
def test_api_base_credentials_are_not_stored_and_come_from_the_environment(sessions, fault,
                                                                          monkeypatch):
    host = fault.api_base.split("://", 1)[1]
    full = f"http://judge:pa55-w0rd-secret@{host}"
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    run = make_run(sessions, version.id, dataset.id, full)

    stored = runs.get_run(sessions, run.id).settings.api_base
    assert "pa55-w0rd-secret" not in stored and "judge:***@" in stored

    failed = run_now(sessions, run.id)  # the credentials are nowhere to be found
    assert failed.status == "failed" and "RUBRIC_WORKBENCH_API_BASE" in failed.error
    assert "pa55-w0rd-secret" not in failed.error and fault.requests == 0

    monkeypatch.setenv("RUBRIC_WORKBENCH_API_BASE", full)
    runs.requeue_run(sessions, run.id, actor=command_line_actor())
    assert run_now(sessions, run.id, worker_id="w2").status == "done"
    assert fault.requests == 6
