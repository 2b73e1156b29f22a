"""What a run says about itself must be true (issues 35.7, 35.8, 36.7): a provider that is
down is named on the run, a cancel stops the run at once and every count agrees, counts
never go backwards between retry passes, and a run with failed grades never reads "done".
Real runner, real litellm HTTP path, the local fake and fault providers, SQLite and
PostgreSQL."""

from __future__ import annotations

import threading
import time

from sqlalchemy import func, select

from storage import cli
from storage import models as m
from storage.jobs.progress import run_progress
from storage.services import runs
from tests.actors import ADMIN
from tests.fake_provider import Reply
from tests.fault_provider import Fault, fault_provider, fault_provider_server, wait_until
from tests.jobs.helpers import (
    CRITERIA,
    RUBRIC_YAML,
    in_thread,
    make_dataset,
    make_rubric,
    make_run,
    run_now,
)

__all__ = ["fault_provider", "fault_provider_server"]


class Watcher:
    """Reads the run's progress every few milliseconds, as a polling page does."""

    def __init__(self, sessions, run_id: int):
        self.sessions, self.run_id = sessions, run_id
        self.seen: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.seen.append(run_progress(self.sessions, self.run_id))
            time.sleep(0.01)

    def stop(self) -> list:
        self._stop.set()
        self._thread.join()
        return self.seen


def _stored_grades(sessions, run_id: int) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.GradeRow)
                              .where(m.GradeRow.run_id == run_id)) or 0


# -- 36.7: retry passes never run the counts backwards ---------------------------------------
def test_counts_never_go_backwards_between_retry_passes(sessions, fake_provider):
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 4)
    fake_provider.default = lambda _body: Reply(status=503, error_message="down")
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, use_cache=False,
                   transport_retries=0, retry_passes=2, pass_delay=0.3)
    watcher = Watcher(sessions, run.id)

    result = run_now(sessions, run.id, heartbeat_interval=0.1)

    seen = watcher.stop()
    assert result.passes == 3
    graded = [p.graded for p in seen]
    done = [p.done for p in seen]
    assert graded == sorted(graded), graded  # was 4 -> 0 -> 1 ... at every pass
    assert done == sorted(done)
    assert max(p.failed for p in seen if p.status == "running") == 4  # failures counted
    final = run_progress(sessions, run.id)
    assert (final.done, final.failed, final.status) == (0, 4, "done")
    assert final.status_words == "finished with 4 failed"
    assert final.fraction == 0.0  # no bar full of failures
    assert (result.graded, result.failed) == (4, 4)
    info = runs.get_run(sessions, run.id)
    assert (info.done_count, info.failed_count) == (0, 4) == (0, _stored_grades(sessions,
                                                                                 run.id))


def test_a_retry_that_succeeds_replaces_the_failure_and_the_counts_only_grow(
        sessions, fake_provider):
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 4)
    fake_provider.enqueue(*[Reply(status=503, error_message="overloaded")] * 4)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, use_cache=False,
                   transport_retries=0, retry_passes=2, pass_delay=0.3)
    watcher = Watcher(sessions, run.id)

    result = run_now(sessions, run.id, heartbeat_interval=0.1)

    seen = watcher.stop()
    assert (result.status, result.graded, result.failed) == ("done", 4, 0)
    assert [p.graded for p in seen] == sorted(p.graded for p in seen)
    assert [p.done for p in seen] == sorted(p.done for p in seen)
    final = run_progress(sessions, run.id)
    assert (final.done, final.failed, final.status_words) == (4, 0, "done")
    assert _stored_grades(sessions, run.id) == 4


def test_every_transient_failure_is_asked_again_when_the_heartbeat_races_the_chunks(
        sessions, fake_provider):
    """A heartbeat on its way while a chunk finished took the done chunk for "taken over";
    SQLite gives the next pass's first chunk the same id, so the pass skipped it: responses
    1 and 2 were never asked again and the run ended "done" with 2 failed (seen under load;
    a heartbeat every millisecond makes the race likely in every run: 7 of 12 failed)."""
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 4)
    for _ in range(5):
        fake_provider.enqueue(*[Reply(status=503, error_message="overloaded")] * 4)
        run = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                       use_cache=False, transport_retries=0, retry_passes=2, pass_delay=0.05)

        result = run_now(sessions, run.id, heartbeat_interval=0.001)

        assert (result.status, result.graded, result.failed) == ("done", 4, 0)
        assert _stored_grades(sessions, run.id) == 4


def test_a_run_whose_grades_all_failed_says_so_on_the_command_line(tmp_path, fake_provider,
                                                                    capsys):
    (tmp_path / "rubric.yaml").write_text(RUBRIC_YAML)
    (tmp_path / "r.csv").write_text("text\none\ntwo\n")
    fake_provider.default = lambda _body: "not json"  # every grade fails (not transiently)

    status = cli.main(["grade", "--rubric", str(tmp_path / "rubric.yaml"), "--responses",
                       str(tmp_path / "r.csv"), "--grader", "per-criterion", "--model",
                       "openai/fake-judge", "--api-base", fake_provider.api_base, "--db",
                       f"sqlite:///{tmp_path / 'cli.db'}", "--no-cache", "--workers", "1"])

    assert status == 1
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert "finished with 2 failed" in row and " done " not in row
    columns = header.split()
    cells = row.split("finished with 2 failed")[1].split()
    assert dict(zip(columns[columns.index("graded"):], cells, strict=False))["graded"] == "0"


# -- 35.7: a provider that is down is named on the run -----------------------------------------
def test_a_provider_that_is_down_is_named_with_since_when_and_the_attempt(sessions, fault_provider):
    fault = fault_provider
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 4)
    fault.always(Fault(kind="reset"))  # connections dropped: the provider is down
    run = make_run(sessions, version.id, dataset.id, fault.api_base, use_cache=False,
                   transport_retries=0, retry_passes=6, pass_delay=1.0)
    thread, box = in_thread(run_now, sessions, run.id, heartbeat_interval=0.1)

    def notice():
        return run_progress(sessions, run.id).notice or ""

    # Seven passes, 1, 2, 4, 8, 16 and 32 s apart: the provider comes back long before the last
    # one even on a loaded machine (with four, the passes could all run out before it did).
    assert wait_until(lambda: "attempt 2 of 7" in notice(), timeout=60), notice()
    progress = run_progress(sessions, run.id)
    assert progress.notice.startswith("provider unreachable since ")
    assert "connection failed" in progress.notice and progress.outage
    assert progress.eta_s is None  # no ETA while nothing can be graded
    assert (progress.done, progress.failed) == (0, 4)  # failures apart, none "graded"

    fault.always(None)  # the provider is back
    thread.join(90)
    assert box["result"].status == "done", box
    final = run_progress(sessions, run.id)
    assert (final.done, final.failed, final.notice) == (4, 0, None)


def test_the_outage_notice_goes_once_the_provider_answers_again(sessions, fault_provider):
    fault = fault_provider
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 6)
    fault.enqueue(*[Fault(kind="reset")] * 2)
    fault.latency = 0.3
    run = make_run(sessions, version.id, dataset.id, fault.api_base, use_cache=False,
                   transport_retries=0, retry_passes=1, pass_delay=0.2, concurrency=1)
    watcher = Watcher(sessions, run.id)

    result = run_now(sessions, run.id, heartbeat_interval=0.05)

    seen = watcher.stop()
    assert result.status == "done"
    notices = [p.notice for p in seen if p.status == "running"]
    first_down = next(i for i, n in enumerate(notices) if n and "unreachable" in n)
    assert None in notices[first_down:]  # cleared while the run went on


# -- 35.8: cancel is immediate and every count agrees ------------------------------------------
def test_cancel_stops_new_calls_at_once_and_no_grade_is_stored_after(sessions, fake_provider):
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 60)
    fake_provider.latency = 0.2
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, use_cache=False,
                   concurrency=4)
    thread, box = in_thread(run_now, sessions, run.id)  # the default 5 s heartbeat
    assert wait_until(lambda: _stored_grades(sessions, run.id) >= 5, timeout=60)

    runs.cancel_run(sessions, run.id, actor=ADMIN)
    cancelled_at = time.monotonic()
    stored_at_cancel = _stored_grades(sessions, run.id)
    thread.join(30)

    assert not thread.is_alive() and box["result"].status == "cancelled", box
    assert _stored_grades(sessions, run.id) == stored_at_cancel  # was 11 -> 24
    late = [t for t in fake_provider.request_times if t > cancelled_at + 1.0]
    assert late == []  # the runner looks every 0.25 s (was: at the 5 s heartbeat)
    info = runs.get_run(sessions, run.id)
    progress = run_progress(sessions, run.id)
    assert info.graded_count == progress.graded == stored_at_cancel
    assert (info.done_count, info.failed_count) == (progress.done, progress.failed)
    assert info.status == progress.status == "cancelled"
