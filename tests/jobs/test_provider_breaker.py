"""A provider that keeps failing pauses the run (issue 40.8): after N failed calls of one kind
with no answer in between, no more calls are made and the run says why; resumed, one probe
call goes first. Real HTTP to the fault provider, on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time

import pytest

from storage.jobs import run_options
from storage.jobs.notices import get_notice
from storage.jobs.progress import run_progress
from storage.services import runs
from tests.actors import ADMIN
from tests.fake_provider import Reply, judge_reply
from tests.fault_provider import Fault, fault_provider, fault_provider_server
from tests.jobs.helpers import CRITERIA, in_thread, make_dataset, make_rubric, make_run, run_now

__all__ = ["fault_provider", "fault_provider_server"]


def _paused_run(sessions, fault, *, responses: int = 10, criteria=CRITERIA, **extra):
    version = make_rubric(sessions, criteria=criteria)
    dataset, _ = make_dataset(sessions, responses)
    return make_run(sessions, version.id, dataset.id, fault.api_base, use_cache=False,
                    **extra)


def _run_within(sessions, run_id: int, seconds: float, **kwargs):
    thread, box = in_thread(run_now, sessions, run_id, heartbeat_interval=0.1, **kwargs)
    thread.join(seconds)
    assert not thread.is_alive(), f"the run was still calling after {seconds} s"
    assert "error" not in box, box
    return box["result"]


def test_an_always_resetting_provider_pauses_the_run_after_about_n_calls(sessions,
                                                                        fault_provider):
    fault = fault_provider
    fault.always(Fault(kind="reset"))
    # The defaults otherwise: 10 transport retries, 3 retry passes 20 s apart (1,320 calls).
    run = _paused_run(sessions, fault, pause_after_failures=10, concurrency=2)

    result = _run_within(sessions, run.id, 60)

    assert fault.requests <= 10 + 2, fault.requests  # N, and what was in flight
    assert result.status == "failed" and result.error.startswith("paused: provider")
    info = runs.get_run(sessions, run.id)
    assert info.paused_by_provider and info.status_words == "paused"
    assert f"openai/fake-judge at {fault.api_base}" in info.error
    assert "failed 10 calls in a row (connection reset or refused)" in info.error
    assert "one probe call goes first" in info.error
    assert run_progress(sessions, run.id).status_words == "paused"
    assert info.graded_count < 10  # grades cut off by the pause stay pending


@pytest.mark.parametrize(("reply", "words"), [
    pytest.param(Reply(status=503, error_message="overloaded"), "HTTP 5xx, last HTTP 503",
                 id="5xx"),
    pytest.param(Fault(kind="html", status=200), "an HTML page instead of an answer",
                 id="html"),
    pytest.param(Fault(kind="html", status=502),
                 "an HTML page instead of an answer, last HTTP 502", id="html-502"),
    pytest.param(Fault(kind="empty_choices"), "answers without any choice", id="no-choices"),
])
def test_each_kind_of_broken_answer_pauses_the_run(sessions, fault_provider, reply, words):
    fault = fault_provider
    fault.always(reply)
    run = _paused_run(sessions, fault, criteria=CRITERIA[:1], pause_after_failures=5,
                      concurrency=1, transport_retries=1, retry_passes=0)

    result = _run_within(sessions, run.id, 60)

    assert fault.requests == 5  # one call at a time: exactly N (was 20: 10 grades x 2)
    assert result.status == "failed"
    assert f"failed 5 calls in a row ({words})" in runs.get_run(sessions, run.id).error


@pytest.mark.parametrize("limits", [
    pytest.param({"call_deadline": 0.5}, id="call-deadline"),  # the call is cut off
    pytest.param({"timeout": 0.5, "call_deadline": 20}, id="attempt-timeout"),
])
def test_a_hanging_provider_trips_the_breaker(sessions, fault_provider, limits):
    fault = fault_provider
    fault.always(Reply(hang=30))
    run = _paused_run(sessions, fault, criteria=CRITERIA[:1], pause_after_failures=3,
                      concurrency=3, retry_passes=0, **limits)

    result = _run_within(sessions, run.id, 30)

    assert fault.requests <= 3 + 3, fault.requests
    assert result.status == "failed"
    assert "failed 3 calls in a row (no answer in time)" in runs.get_run(sessions,
                                                                         run.id).error


def test_a_provider_failing_between_answers_never_trips(sessions, fault_provider, monkeypatch):
    fault = fault_provider
    # The six grades retry side by side through the one slot, and which of them gets each
    # fourth (answered) call is the order they come back in: one grade may fail 8 times in a
    # row, and the run's own backoff (0.25 s doubling, up to 30 s) then made this test take
    # 15-60+ s from one run to the next (CI: over 60 s). What is tested is the count, not the
    # waits, so the waits are short.
    monkeypatch.setattr(run_options, "RETRY_BASE_DELAY", 0.005)
    monkeypatch.setattr(run_options, "RETRY_MAX_DELAY", 0.05)
    counter = itertools.count()
    lock = threading.Lock()

    def three_of_four_fail(body):
        with lock:
            number = next(counter)
        return judge_reply(body) if number % 4 == 3 else Fault(kind="reset")

    fault.default = three_of_four_fail
    run = _paused_run(sessions, fault, criteria=CRITERIA[:1], responses=6,
                      pause_after_failures=4, concurrency=1)

    result = _run_within(sessions, run.id, 60)

    assert result.status == "done", result
    info = runs.get_run(sessions, run.id)
    assert (info.done_count, info.failed_count, info.error) == (6, 0, None)
    assert fault.requests == 6 * 4


def test_resuming_probes_with_one_call_and_stays_paused_while_the_provider_is_down(
        sessions, fault_provider):
    fault = fault_provider
    fault.always(Fault(kind="reset"))
    run = _paused_run(sessions, fault, criteria=CRITERIA[:1], pause_after_failures=4,
                      concurrency=1, transport_retries=0, retry_passes=0)
    _run_within(sessions, run.id, 60)
    first = runs.get_run(sessions, run.id)
    assert first.paused_by_provider and first.done_count == 0
    assert 1 <= first.failed_count <= 4  # grades that failed before it paused
    asked = fault.requests

    runs.requeue_run(sessions, run.id, actor=ADMIN)  # the app's Resume (Requeue) button
    assert runs.get_run(sessions, run.id).status_words == "queued"
    again = _run_within(sessions, run.id, 60, worker_id="w2")

    assert fault.requests == asked + 1  # one probe call, nothing more
    assert again.status == "failed"
    info = runs.get_run(sessions, run.id)
    assert info.paused_by_provider
    assert "failed 5 calls in a row (connection reset or refused)" in info.error
    assert "the last was the probe call made on resuming at" in info.error
    assert get_notice(sessions, run.id) == info.error  # remembered for the next resume

    fault.always(None)  # the provider is back
    runs.requeue_run(sessions, run.id, actor=ADMIN)
    done = _run_within(sessions, run.id, 60, worker_id="w3")

    assert done.status == "done", done
    info = runs.get_run(sessions, run.id)
    # everything graded: the grades that failed while it was down are graded again too
    assert (info.done_count, info.failed_count, info.error) == (10, 0, None)
    assert get_notice(sessions, run.id) is None
    assert run_progress(sessions, run.id).status_words == "done"


def test_the_pause_is_remembered_when_the_heartbeat_was_writing_a_notice_as_the_run_ended(
        sessions, fault_provider, monkeypatch):
    """The heartbeat writes the run's notice in a thread; cancelled as the run ends, its
    thread goes on. The pause's reason, written last, must be what the database keeps: CI
    saw the heartbeat's older notice land after it, and the resumed run then made four calls
    again instead of one probe. The database is made slow for every notice but the pause's
    (a write takes 1 s), so the heartbeat is still writing when the run pauses."""
    from storage.dto import PROVIDER_PAUSE
    from storage.jobs import runner

    real_set_notice = runner.set_notice
    slow_writes: list[str | None] = []

    def slow_database(sessions_, run_id, notice):
        if notice is None or not notice.startswith(PROVIDER_PAUSE):
            slow_writes.append(notice)
            time.sleep(1.0)
        real_set_notice(sessions_, run_id, notice)

    monkeypatch.setattr(runner, "set_notice", slow_database)
    fault = fault_provider
    fault.always(Fault(kind="reset", delay=0.3))  # each failed call takes 0.3 s
    run = _paused_run(sessions, fault, criteria=CRITERIA[:1], pause_after_failures=4,
                      concurrency=1, transport_retries=0, retry_passes=0)

    _run_within(sessions, run.id, 60)

    assert slow_writes, "the heartbeat wrote no notice while the calls failed"
    info = runs.get_run(sessions, run.id)
    assert info.paused_by_provider
    assert get_notice(sessions, run.id) == info.error
    asked = fault.requests
    runs.requeue_run(sessions, run.id, actor=ADMIN)
    _run_within(sessions, run.id, 60, worker_id="w2")
    assert fault.requests == asked + 1  # resumed: one probe call, nothing more


def test_the_worker_command_says_the_run_paused_and_why(sessions, db_url, fault_provider):
    fault = fault_provider
    fault.always(Fault(kind="reset"))
    run = _paused_run(sessions, fault, criteria=CRITERIA[:1], pause_after_failures=5,
                      concurrency=1)
    env = {**os.environ, "RUBRIC_WORKBENCH_API_KEY": "k", "LITELLM_LOG": "ERROR"}

    done = subprocess.run([sys.executable, "-c", "import sys; from storage.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", "worker", "--db", db_url,
                           "--until-idle"], env=env, capture_output=True, text=True,
                          timeout=120)

    assert done.returncode == 1, done.stderr
    assert fault.requests <= 5 + 1
    assert f"run {run.id} paused: provider openai/fake-judge" in done.stderr
    assert "failed 5 calls in a row (connection reset or refused)" in done.stderr
    assert f"run {run.id} ended paused" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_grade_command_says_paused_and_the_same_command_resumes(tmp_path, fault_provider,
                                                                   capsys):
    from storage import cli
    from tests.jobs.helpers import write_grade_inputs

    fault = fault_provider
    fault.always(Fault(kind="reset"))
    command = [*write_grade_inputs(tmp_path, 5), "--api-base", fault.api_base, "--db",
               f"sqlite:///{tmp_path / 'cli.db'}", "--workers", "1", "--concurrency", "1",
               "--pause-after-failures", "4"]

    assert cli.main(command) == 1
    out = capsys.readouterr().out
    assert fault.requests == 4
    row = out.splitlines()[1]
    assert " paused " in row, out
    assert "failed 4 calls in a row (connection reset or refused)" in out

    fault.always(None)  # back: the same command resumes the run, the probe first
    assert cli.main(command) == 0
    captured = capsys.readouterr()
    assert "resuming run(s) 1" in captured.err
    assert " done " in captured.out.splitlines()[1], captured.out
    assert fault.requests == 4 + 5


@pytest.mark.parametrize("count", [-1, 2.5, "ten", True])
def test_a_pause_setting_that_is_not_a_whole_number_is_refused_at_launch(sessions, count):
    from grading.errors import ConfigurationError

    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    with pytest.raises(ConfigurationError, match="pause_after_failures must be a whole"):
        make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1",
                 pause_after_failures=count)
    assert runs.list_runs(sessions) == []


def test_a_run_launched_without_the_breaker_never_pauses(sessions, fault_provider):
    fault = fault_provider
    fault.always(Fault(kind="reset"))
    run = _paused_run(sessions, fault, criteria=CRITERIA[:1], pause_after_failures=0,
                      concurrency=1, transport_retries=0, retry_passes=0)

    result = _run_within(sessions, run.id, 60)

    assert (result.status, result.failed, fault.requests) == ("done", 10, 10)
    assert not runs.get_run(sessions, run.id).paused_by_provider


def test_a_probe_cut_off_before_it_went_out_hands_the_probe_to_the_next_call():
    """Half open, one call probes and the others wait; a probe cut off while it waited for a
    slot (its call deadline) must not leave them waiting for ever."""
    import asyncio

    from storage.jobs.provider_breaker import ProviderBreaker, pause_reason

    async def scenario() -> list[str]:
        notice = pause_reason("openai/x", 30, "connection reset or refused", "20:00:00 UTC")
        breaker = ProviderBreaker(30, "openai/x", on_trip=lambda _: None, paused=notice)
        seen: list[str] = []

        async def call(name: str) -> None:
            probe = await breaker.before_call()
            seen.append(f"{name}:{'probe' if probe else 'call'}")

        assert await breaker.before_call() is True  # the first call probes
        waiting = [asyncio.create_task(call("b")), asyncio.create_task(call("c"))]
        await asyncio.sleep(0.05)
        assert seen == []  # the others wait for the probe
        breaker.abandon_probe()
        await asyncio.sleep(0.05)
        assert seen == ["b:probe"]  # one of them probes now, the other still waits
        breaker.answered()
        await asyncio.gather(*waiting)
        return seen

    assert asyncio.run(scenario()) == ["b:probe", "c:call"]
