"""A large export written by two processes (storage/export_parts.py), on SQLite and
PostgreSQL: byte for byte what one process writes (CSV and JSONL, runs and a panel, people's
verdicts, a blind reviewer's view, texts that need quoting, pages of two), the second
process's failure said in words, and nothing left running or open after an error."""

from __future__ import annotations

import os
import subprocess

import pytest
from sqlalchemy import func, select

from storage import export_parts, exports
from storage import models as m
from storage.engine import create_db_engine, make_session_factory
from storage.services.blindness import EVERYTHING, as_reviewer
from tests.actors import ADMIN
from tests.storage.test_export_files import _world


def _alone(monkeypatch):
    monkeypatch.setattr(export_parts, "SPLIT_AT", 10**9)


def _split(monkeypatch):
    """Split whatever the size, and whatever the machine's load (the shared test machine
    is rarely idle)."""
    monkeypatch.setattr(export_parts, "SPLIT_AT", 0)
    monkeypatch.setattr(export_parts, "free_core", lambda: True)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("sight", [EVERYTHING, as_reviewer("ana")], ids=["all", "ana"])
def test_two_processes_write_the_bytes_one_process_writes(sessions, copied_world, fmt, sight,
                                                          monkeypatch):
    judges, panel = copied_world("export_world", _world)
    _alone(monkeypatch)
    assert export_parts.split(sessions, judges, [panel.id])[1] is None
    with exports.results_export_file(sessions, judges, fmt, [panel.id], sight=sight) as one:
        alone = one.read()
    assert "漢字".encode() in alone and alone.count(b"\n") > 20
    _split(monkeypatch)
    mine, theirs = export_parts.split(sessions, judges, [panel.id])
    assert mine.run_ids == tuple(judges[:2]) and theirs == export_parts.Part(
        (judges[2],), (panel.id,))  # equal parts: two runs here, a run and the panel there
    with exports.results_export_file(sessions, judges, fmt, [panel.id], sight=sight) as two:
        assert two.read() == alone
    assert exports.results_export(sessions, judges, fmt, [panel.id],
                                  sight=sight).encode("utf-8") == alone
    monkeypatch.setattr(exports, "_PAGE", 2)  # both processes page by two
    with exports.results_export_file(sessions, judges, fmt, [panel.id], sight=sight) as paged:
        assert paged.read() == alone


def test_the_parts_are_as_near_in_records_as_the_runs_allow(sessions, copied_world, monkeypatch):
    judges, panel = copied_world("export_world", _world)
    _split(monkeypatch)
    with sessions() as session:
        per_run = [session.scalar(select(func.count()).where(m.GradeRow.run_id == r))
                   for r in judges]
    assert len(set(per_run)) > 1  # runs of different sizes
    mine, theirs = export_parts.split(sessions, judges, [])
    cut = len(mine.run_ids)
    total = sum(per_run)
    assert abs(2 * sum(per_run[:cut]) - total) == min(
        abs(2 * sum(per_run[:k]) - total) for k in range(1, len(judges)))
    assert mine.run_ids + theirs.run_ids == tuple(judges) and not theirs.panel_ids
    assert export_parts.split(sessions, judges[:1], [])[1] is None  # one run: one process
    assert export_parts.split(sessions, [], [panel.id])[1] is None


def test_a_busy_machine_has_the_export_written_by_one_process(sessions, copied_world, monkeypatch):
    assert export_parts.free_core(idle=1.9)  # two cores idle: this process's and another
    assert not export_parts.free_core(idle=1.0)  # another process busy on one of two
    assert 0 <= export_parts.idle_cores(0.05) <= (os.cpu_count() or 1) + 0.01
    judges, panel = copied_world("export_world", _world)
    _split(monkeypatch)
    assert export_parts.split(sessions, judges, [panel.id])[1] is not None
    monkeypatch.setattr(export_parts, "free_core", lambda: False)
    assert export_parts.split(sessions, judges, [panel.id])[1] is None


def test_an_export_too_small_to_split_never_waits_to_measure_the_idle_cores(
        sessions, copied_world, monkeypatch):
    """Measuring them sleeps 0.1 s: an export under ``SPLIT_AT`` records is written by one
    process whatever the machine's load, so it does not wait for that."""
    judges, panel = copied_world("export_world", _world)
    measured: list[float] = []
    real = export_parts.idle_cores
    monkeypatch.setattr(export_parts, "idle_cores",
                        lambda *args: measured.append(1) or real(*args))
    assert export_parts.split(sessions, judges, [panel.id])[1] is None
    exports.results_export(sessions, judges, "csv", [panel.id])
    assert measured == []
    monkeypatch.setattr(export_parts, "SPLIT_AT", 0)  # big enough: the load decides
    export_parts.split(sessions, judges, [panel.id])
    assert measured == [1]


def test_without_proc_stat_or_a_load_average_nothing_is_split(monkeypatch):
    """A platform with neither (Windows) measures no idle core: one process writes."""
    def no_file(*_args, **_kwargs):
        raise FileNotFoundError("/proc/stat")

    monkeypatch.setattr(export_parts, "open", no_file, raising=False)
    monkeypatch.delattr(os, "getloadavg")
    assert export_parts.idle_cores(0.01) == 0.0
    assert not export_parts.free_core()


def test_an_in_memory_database_is_written_by_one_process(monkeypatch):
    _split(monkeypatch)
    engine = create_db_engine("sqlite://")
    try:
        assert not export_parts._shareable(make_session_factory(engine))
    finally:
        engine.dispose()


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_the_second_process_failing_is_said_and_leaves_nothing_open(sessions, copied_world):
    judges, _panel = copied_world("export_world", _world)
    before = _open_descriptors()
    missing = export_parts.Part((judges[-1] + 999,), ())
    with (export_parts.later(sessions, missing, "jsonl", EVERYTHING, None, None) as rest,
          open(os.devnull, "w", encoding="utf-8") as target,
          pytest.raises(export_parts.ExportPartFailed,
                        match=r"later runs failed \(exit 1\): .*\b" + str(judges[-1] + 999))):
        rest.copy_to(target)
    assert _open_descriptors() <= before


def test_an_error_here_stops_the_second_process(sessions, copied_world):
    judges, panel = copied_world("export_world", _world)
    before = _open_descriptors()
    everything = export_parts.Part(tuple(judges), (panel.id,))
    with (pytest.raises(RuntimeError, match="stopped"),
          export_parts.later(sessions, everything, "csv", EVERYTHING,
                             *_columns(sessions, judges, panel)) as rest):
        process: subprocess.Popen = rest._process
        raise RuntimeError("stopped")  # as Streamlit stops a script mid-export
    assert process.returncode is not None  # killed (or done), and waited for
    assert _open_descriptors() <= before


def test_the_second_process_exits_when_its_parent_goes(sessions, copied_world):
    """Its stdin closing (the parent died) ends it, whatever it was doing."""
    judges, panel = copied_world("export_world", _world)
    with export_parts.later(sessions, export_parts.Part(tuple(judges), (panel.id,)), "csv",
                            EVERYTHING, *_columns(sessions, judges, panel)) as rest:
        process: subprocess.Popen = rest._process
        process.stdin.close()
        assert process.wait(timeout=60) in (0, 3)  # 3: stopped by its watch; 0: it was done


def test_the_watch_stops_a_second_process_still_at_work_when_its_stdin_closes():
    """The watch itself, in a process busy for a minute: closing its stdin (the parent
    gone) stops it at once with the watch's exit code 3, not 0 at the end of its work."""
    import sys
    import time

    busy = ("import threading, time\n"
            "from storage.export_parts import _exit_when_parent_goes\n"
            "threading.Thread(target=_exit_when_parent_goes, daemon=True).start()\n"
            "time.sleep(60)\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    process = subprocess.Popen([sys.executable, "-c", busy], stdin=subprocess.PIPE,
                               cwd=root, env={**os.environ, "PYTHONPATH": root})
    try:
        time.sleep(1.0)  # imported, watching
        assert process.poll() is None
        process.stdin.close()
        assert process.wait(timeout=20) == 3
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _columns(sessions, judges, panel):
    uploaded = exports.export_upload_columns(sessions, judges, [panel.id])
    return exports.csv_columns(exports.criterion_labels(sessions, judges, [panel.id]), True,
                               uploaded), uploaded


def test_shared_cells_with_percent_signs_quotes_and_formulas_are_written_as_before(
        sessions, monkeypatch):
    """A run's shared cells are written once into its line's template (storage/export_csv.py):
    a rubric name that is a formula, quoted, with ``%`` signs, is the per-grade builder's."""
    import random

    from storage.services import datasets, runs
    from tests.storage.helpers import make_rubric, make_run
    from tests.storage.recomputed import recomputed
    from tests.storage.test_panel_decisions import CRITERIA, _report

    version = make_rubric(sessions, '=%s, "100%" dose %(x)s', CRITERIA)
    dataset = datasets.create_dataset(
        sessions, "Percent", actor=ADMIN,
        responses=[{"id": f"{i}%s", "query": "%d", "text": f"answer {i} %%", "n%": "%"}
                   for i in range(5)])
    rng = random.Random(3)
    judges = [make_run(sessions, version.id, dataset.id).id for _ in range(2)]
    for run_id in judges:
        for response in datasets.list_responses(sessions, dataset.id, limit=None):
            runs.record_grade(sessions, run_id, response.id, _report(rng))
    _split(monkeypatch)
    new = exports.results_export(sessions, judges, "csv")
    assert "'=%s, \"\"100%\"\" dose %(x)s" in new
    with recomputed():
        assert exports.results_export(sessions, judges, "csv") == new


def test_a_relative_sqlite_path_is_the_same_file_for_the_second_process(
        db_url, backend, monkeypatch, tmp_path):
    """The second process runs in the code's folder: a path relative to here is made
    absolute for it."""
    if backend != "sqlite":
        pytest.skip("a file path")
    monkeypatch.chdir(tmp_path)
    relative = os.path.relpath(db_url.removeprefix("sqlite:///"), tmp_path)
    engine = create_db_engine(f"sqlite:///{relative}")
    try:
        sessions = make_session_factory(engine)
        judges, panel = _world(sessions)
        _alone(monkeypatch)
        alone = exports.results_export(sessions, judges, "csv", [panel.id])
        _split(monkeypatch)
        assert export_parts._url(sessions) == db_url
        assert exports.results_export(sessions, judges, "csv", [panel.id]) == alone
    finally:
        engine.dispose()
