"""The helpers ``grade`` starts before its runs exist (``helper_processes.EarlyHelpers``): they
import litellm while the grading process stores the inputs, learn their runs from the "go"
line, and never outlive a command that ends before setting them to work.

Real processes, a real database (SQLite file and PostgreSQL) and the local fake provider.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from storage import cli
from storage.engine import open_database
from storage.jobs import autoscale, helper_processes
from storage.jobs.helper_processes import go_line
from storage.jobs.queue import DEFAULT_LEASE_SECONDS
from storage.services import runs
from tests.fault_provider import wait_until
from tests.jobs.helpers import (
    assert_each_response_asked,
    chunk_holders,
    make_dataset,
    make_rubric,
    make_run,
    run_now,
    standby_helpers,
    write_grade_inputs,
)

ROOT = Path(__file__).resolve().parents[2]




def _standby_worker(db_url: str) -> subprocess.Popen:
    """A helper as ``grade`` starts it before its runs exist: standby, no ``--run``."""
    command = [sys.executable, "-m", "storage.cli", "worker", "--db", db_url, "--until-idle",
               "--poll", "0.2", "--standby"]
    return subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})


@contextlib.contextmanager
def _grade_at_a_terminal(argv: list[str]) -> Iterator[subprocess.Popen]:
    """``rubric-workbench <argv>`` in a process group of its own, where Ctrl-C raises
    KeyboardInterrupt as from a terminal: Python leaves SIGINT ignored when it starts with
    it ignored (a background job of a shell without job control, as CI's). Killed at the
    end of the block if it still runs."""
    command = [sys.executable, "-c", "import runpy, signal, sys; "
               "signal.signal(signal.SIGINT, signal.default_int_handler); "
               "sys.argv = ['rubric-workbench', *sys.argv[1:]]; "
               "runpy.run_module('storage.cli', run_name='__main__')", *argv]
    grade = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True,
                             env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    try:
        yield grade
    finally:
        if grade.poll() is None:
            grade.kill()


def _ctrl_c(grade: subprocess.Popen) -> str:
    """Ctrl-C at a terminal signals the whole foreground process group; what it printed."""
    os.killpg(grade.pid, signal.SIGINT)
    return grade.communicate(timeout=60)[1]


def _grade_argv(tmp_path, db_url: str, fake_provider, count: int, workers: str = "2",
                *extra: str) -> list[str]:
    """``grade``'s arguments for ``count`` responses against the fake provider."""
    return [*write_grade_inputs(tmp_path, count), "--api-base", fake_provider.api_base,
            "--db", db_url, "--workers", workers, *extra]


def _the_same_command_resumes(argv: list[str], db_url: str, run_id: int, count: int,
                              capsys) -> str:
    """``grade`` run again after it was stopped: it resumes run ``run_id`` (no other run is
    made), grades every response and leaves no helper behind; what it printed."""
    sessions = open_database(db_url)
    status = cli.main(argv)
    err = capsys.readouterr().err
    assert status == 0, err
    assert f"resuming run(s) {run_id}" in err
    assert [r.id for r in runs.list_runs(sessions)] == [run_id]
    grades = runs.list_grades(sessions, run_id)
    assert len(grades) == count and all(g.score == 1.0 for g in grades)
    assert standby_helpers(db_url) == []
    return err


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)
def test_a_helper_started_before_its_runs_exist_helps_with_the_runs_it_is_told_only(
        db_url, sessions, fake_provider):
    fake_provider.latency = 0.2
    helper = _standby_worker(db_url)
    try:
        assert helper.stdout.readline().strip() == "ready"  # litellm imported, no run yet
        version = make_rubric(sessions)
        dataset, _ = make_dataset(sessions, 100)  # 4 chunks
        told = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
        other = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
        helper.stdin.write(go_line(None, [told.id]))
        helper.stdin.close()
        result = run_now(sessions, told.id)  # as the grading process does; the helper joins
        assert helper.wait(120) == 0, helper.stderr.read()
    finally:
        if helper.poll() is None:
            helper.kill()
    assert result.status == "done" and result.failed == 0
    assert len(chunk_holders(sessions, told.id)) == 2  # the helper graded chunks of its run
    assert not chunk_holders(sessions, other.id)
    grades = runs.list_grades(sessions, told.id)
    assert len(grades) == 100 and all(g.score is not None for g in grades)
    assert_each_response_asked(fake_provider.answered, 100, times=3)  # once per criterion
    assert runs.get_run(sessions, other.id).status == "queued"  # not its run: untouched


@pytest.mark.parametrize("workers", ["2", "auto"])
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_grade_that_stops_before_grading_leaves_no_helper_behind(
        db_url, tmp_path, monkeypatch, capsys, workers):
    # Enough responses for "auto" to start its standby helper early; then the credentials
    # are found missing, after the helpers started: the command says so, and stops them.
    monkeypatch.delenv("RUBRIC_WORKBENCH_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    started: list[subprocess.Popen] = []
    start = helper_processes.start_helpers

    def recorded(*args, **kwargs):
        helpers = start(*args, **kwargs)
        started.extend(helpers)
        return helpers

    monkeypatch.setattr(helper_processes, "start_helpers", recorded)
    monkeypatch.setattr(autoscale, "MAX_HELPERS", 1)  # a spare core, whatever the machine
    argv = write_grade_inputs(tmp_path, 400)
    argv[argv.index("openai/fake-judge")] = "openai/gpt-4.1-mini"
    status = cli.main([*argv, "--db", db_url, "--workers", workers])

    err = capsys.readouterr().err
    assert status == 1
    assert len(started) == 1  # started before the credentials were looked at ...
    assert all(helper.poll() is not None for helper in started)  # ... and stopped
    assert "OPENAI_API_KEY" in err and "Traceback" not in err
    assert standby_helpers(db_url) == []
    assert runs.list_runs(open_database(db_url)) == []  # nothing was stored for a run


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_workers_2_grades_each_response_once_with_its_early_helper(
        db_url, tmp_path, fake_provider, capsys):
    # The run must outlast the helper's "go" whatever the load: unbounded, the command's
    # window doubles with slow start and can claim every chunk before its helper takes one
    # (the race the kill test below met on CI). --concurrency 4 holds both to 4 calls in
    # flight: 200 calls at 0.1 s take ~5 s, long after the ready helper is told to go.
    fake_provider.latency = 0.1
    count = 200
    status = cli.main(_grade_argv(tmp_path, db_url, fake_provider, count, "2",
                                  "--concurrency", "4"))
    err = capsys.readouterr().err

    assert status == 0, err
    assert "1 helper worker(s) ready" in err
    # The helper learned its run from "go".
    assert len(chunk_holders(open_database(db_url))) == 2, err
    assert_each_response_asked(fake_provider.answered, count)
    grades = runs.list_grades(open_database(db_url), 1)
    assert len(grades) == count and all(g.score == 1.0 for g in grades)
    assert standby_helpers(db_url) == []


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_ctrl_c_while_the_helpers_start_stops_them_without_a_traceback(
        db_url, tmp_path, fake_provider):
    # Ctrl-C at a terminal signals the whole foreground process group: here, the moment the
    # helper exists (the grading process is then importing litellm, seconds before grading).
    argv = _grade_argv(tmp_path, db_url, fake_provider, 200)
    with _grade_at_a_terminal(argv) as grade:
        assert wait_until(lambda: standby_helpers(db_url), 60, 0.02), "no helper was started"
        err = _ctrl_c(grade)
    assert grade.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err, err
    assert standby_helpers(db_url) == []
    assert fake_provider.answered == [] or "cancelled" in err  # graded nothing, or said so


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_helper_stops_when_its_grade_command_is_killed_and_the_command_resumes(
        db_url, tmp_path, fake_provider, capsys):
    # SIGKILL (the out-of-memory killer, a CI timeout) leaves the command no time to stop
    # its helpers: the helper notices and stops instead of grading on for nobody. The run
    # must outlast the helper's start, whatever the machine's load: unbounded, the command's
    # window follows its limit as slow start doubles it, and on CI it claimed every chunk
    # and finished before its helper took one (200 responses at 0.2 s in 1.97 s, then 400 at
    # 0.5 s in 6.41 s). --concurrency 4 holds the command and its helper to 4 calls in
    # flight between them (a few responses each): 400 x 3 calls at 0.5 s take 150 s, so
    # chunks stay open long after the helper is told to go.
    fake_provider.latency = 0.5
    count = 400
    argv = _grade_argv(tmp_path, db_url, fake_provider, count, "2", "--concurrency", "4")

    sessions = open_database(db_url)  # migrated here once, not by every look below

    def both_grading() -> bool:
        return len([h for h in chunk_holders(sessions) if h]) == 2

    with _grade_at_a_terminal(argv) as grade:
        if not wait_until(both_grading, 120, 0.05):
            grade.kill()
            pytest.fail(f"the helper never took a chunk: {grade.communicate(timeout=30)}")
        grade.kill()
        grade.wait(10)
        assert wait_until(lambda: not standby_helpers(db_url), 15), "the helper grades on"
        err = grade.stderr.read()
    assert "the grade command that started this helper is gone: stopping" in err, err
    assert "Traceback" not in err, err
    assert wait_until(lambda: fake_provider.in_flight == 0, 10)
    asked = fake_provider.requests
    time.sleep(1.0)
    assert fake_provider.requests == asked  # nothing is asked for the killed command

    # The same command again: the same run, every response graded.
    fake_provider.latency = 0.01
    (run,) = runs.list_runs(sessions)
    _the_same_command_resumes(argv, db_url, run.id, count, capsys)


# A Ctrl-C at the terminal that lands while a helper is being forked: Python raises it
# before ``Popen`` returns, as if no helper existed. Sent here the moment the helpers exist.
_CTRL_C_AS_THE_HELPERS_ARE_FORKED = """
import os, signal, sys, time
from storage import cli
from storage.jobs import helper_processes

signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal
start = helper_processes.start_helpers

def started_then_interrupted(*args, **kwargs):
    helpers = start(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.1)  # the interrupt is taken here, before the helpers are returned
    return helpers

helper_processes.start_helpers = started_then_interrupted
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_ctrl_c_as_the_helpers_are_forked_still_stops_them(db_url, tmp_path, fake_provider):
    argv = _grade_argv(tmp_path, db_url, fake_provider, 200, "3")
    done = subprocess.run([sys.executable, "-c", _CTRL_C_AS_THE_HELPERS_ARE_FORKED, *argv],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})

    assert done.returncode == 130, done.stderr
    assert "interrupted before grading" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert standby_helpers(db_url) == []  # both were stopped before the command returned
    assert fake_provider.requests == 0


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_standby_helper_whose_grading_process_is_gone_exits_quietly(db_url):
    # Its grading process was interrupted while the helper imported: nobody reads "ready".
    helper = _standby_worker(db_url)
    helper.stdout.close()
    try:
        status = helper.wait(120)
    finally:
        if helper.poll() is None:
            helper.kill()
    err = helper.stderr.read()
    assert status == 0, err
    assert "error" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_ctrl_c_while_the_opening_is_out_stops_the_helper_and_the_command_resumes(
        db_url, tmp_path, fake_provider, capsys):
    # The grading process has sent its opening round; its helper waits on standby for the
    # go line, which comes only once the opening's answers have taught something. Ctrl-C
    # lands between the two: no answer yet, calls in flight.
    fake_provider.latency = 3.0
    count = 120
    argv = _grade_argv(tmp_path, db_url, fake_provider, count)
    with _grade_at_a_terminal(argv) as grade:
        assert wait_until(lambda: fake_provider.requests, 60, 0.02), "no opening was sent"
        assert standby_helpers(db_url), "no helper was started"
        assert fake_provider.answered == []  # the opening is still out
        err = _ctrl_c(grade)
    assert grade.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err, err
    assert wait_until(lambda: not standby_helpers(db_url), 10)  # it did not outlive the command
    sessions = open_database(db_url)
    (run,) = runs.list_runs(sessions)
    assert runs.list_grades(sessions, run.id) == []  # nothing answered, nothing stored

    # The interrupted opening's calls are held by the provider until their 3 s are up (it
    # answers into closed connections): let them end before counting what is asked next.
    assert wait_until(lambda: fake_provider.in_flight == 0, 10)

    # The same command again: the same run, every response graded once.
    fake_provider.latency = 0.01
    asked_before = len(fake_provider.answered)
    _the_same_command_resumes(argv, db_url, run.id, count, capsys)
    assert_each_response_asked(fake_provider.answered[asked_before:], count)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_standby_helper_told_to_go_without_runs_takes_none_of_the_database(
        db_url, sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 3)
    queued = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    helper = _standby_worker(db_url)
    try:
        assert helper.stdout.readline().strip() == "ready"
        helper.stdin.write(go_line(None, []))
        helper.stdin.close()
        assert helper.wait(60) == 2
        assert "without any run" in helper.stderr.read()
    finally:
        if helper.poll() is None:
            helper.kill()
    assert runs.get_run(sessions, queued.id).status == "queued"  # not a general worker
    assert fake_provider.answered == []


# Python raises KeyboardInterrupt where a Ctrl-C lands; this one lands in the grading
# process's import of litellm (the step that takes seconds), once its runs exist.
_INTERRUPTED_IN_THE_IMPORT = """
import sys
from storage import cli
from storage.jobs import run_options

def interrupted():
    raise KeyboardInterrupt

run_options.preload_litellm = interrupted
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_ctrl_c_after_the_runs_exist_and_before_grading_resumes_with_the_same_command(
        db_url, tmp_path, fake_provider, capsys, workers):
    fake_provider.latency = 0.01
    count = 120
    argv = _grade_argv(tmp_path, db_url, fake_provider, count, workers)
    done = subprocess.run([sys.executable, "-c", _INTERRUPTED_IN_THE_IMPORT, *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})

    assert done.returncode == 130, done.stderr
    assert "interrupted before grading" in done.stderr and "Traceback" not in done.stderr
    sessions = open_database(db_url)
    (run,) = runs.list_runs(sessions)
    assert runs.list_grades(sessions, run.id) == []
    assert fake_provider.answered == []
    assert standby_helpers(db_url) == []  # a helper told to go was stopped too

    # The same command again: the same run, taken over at once (the process that claimed it
    # is gone), every response graded once.
    started = time.monotonic()
    _the_same_command_resumes(argv, db_url, run.id, count, capsys)
    assert time.monotonic() - started < DEFAULT_LEASE_SECONDS  # not once the claim lapsed
    assert_each_response_asked(fake_provider.answered, count)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_more_workers_than_calls_allowed_grade_with_as_many_processes_as_calls(
        db_url, tmp_path, fake_provider, capsys):
    # Each process keeps at least one call in flight: three processes under
    # --concurrency 2 would keep three.
    fake_provider.latency = 0.05
    count = 150
    status = cli.main(_grade_argv(tmp_path, db_url, fake_provider, count, "3",
                                  "--concurrency", "2"))
    err = capsys.readouterr().err

    assert status == 0, err
    assert "grading with 2 process(es), not 3" in err
    assert "1 helper worker(s) ready" in err
    assert fake_provider.max_outstanding <= 2
    assert_each_response_asked(fake_provider.answered, count)
    assert standby_helpers(db_url) == []
