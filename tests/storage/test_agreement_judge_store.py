"""The judges' pattern count kept in the database (storage.services.agreement_judge_store):
counted and stored once, read back by another process as the very rows ``judge_patterns``
counts now; counted again when a run is added, a panel is removed or its stored keys do not
match (a grade landing advances it: tests/storage/test_judge_advance.py); never kept while a
panel is unsettled. SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from sqlalchemy import func, select, update

from grading.types import ScoringSettings, Verdict
from storage import models as m
from storage.engine import create_db_engine, make_session_factory
from storage.services import (
    agreement,
    agreement_judge_counts,
    agreement_judge_store,
    agreement_kept,
    datasets,
    panels,
    runs,
)
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, Calls, another_process, judge_report
from tests.storage.test_report_counts import _random_world, unsettled_panel

M, U, C = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS


def _same_count(a, b) -> None:
    """Two counts made separately: the same keys, voters, stamp and rows. Their order is the
    GROUP BY's own (on PostgreSQL two counts may list the rows in different orders); what is
    stored is read back in the stored order (compared with ==)."""
    assert dataclasses.replace(a, rows=()) == dataclasses.replace(b, rows=())
    assert Counter(a.rows) == Counter(b.rows) and len(a.rows) == len(b.rows)


def _stored_sets(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.JudgePatternSetRow))



@pytest.mark.parametrize("seed", [31, 32, 33])
def test_a_new_process_reads_the_stored_count_as_the_count_made_now(
        sessions, db_url, monkeypatch, seed):
    version, dataset = _random_world(sessions, seed, responses=30)
    counts = Calls(monkeypatch, agreement_judge_store, "judge_patterns")
    first = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    assert counts.calls == 1 and _stored_sets(sessions) == 1

    other = another_process(db_url)
    try:
        read = agreement_judge_store.kept_patterns(other, version.id, dataset.id)
    finally:
        other.kw["bind"].dispose()

    assert counts.calls == 1  # read back, not counted
    now = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    assert read == first  # keys, voters, stamp and every row in its order
    _same_count(now, read)  # a count made now
    assert any(row[-2] is not None for row, _n in read.rows)  # units where voters disagree
    assert len({row[2:-2] for row, _n in read.rows}) > 5  # many patterns, codes round-trip


def test_the_report_built_on_the_stored_count_is_the_whole_report(sessions, db_url):
    version, dataset = _random_world(sessions, 34, responses=30)
    agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    other = another_process(db_url)
    try:
        read = agreement_judge_store.kept_patterns(other, version.id, dataset.id)
    finally:
        other.kw["bind"].dispose()

    kept = agreement_kept.build(sessions, version.id, dataset.id, read)

    assert kept is not None
    whole = agreement.agreement_report(sessions, version.id, dataset.id)
    assert kept.report == whole and kept.report.patterns == whole.patterns


def _grade_lands(sessions, version, dataset):
    """A grade lands in the second run (what test_agreement_inputs moves the judges by; the
    count itself advances over it: tests/storage/test_judge_advance.py)."""
    made = runs.list_runs(sessions, rubric_version_id=version.id, dataset_id=dataset.id)
    graded = {g.response_id for g in runs.list_grades(sessions, made[1].id)}
    spare = next(r for r in datasets.list_responses(sessions, dataset.id)
                 if r.id not in graded)
    runs.record_grade(sessions, made[1].id, spare.id, judge_report(
        CRITERIA, [M, U, U, M], ScoringSettings(), spare.output))


def _run_added(sessions, version, dataset):
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/new", actor=ADMIN)
    for response in datasets.list_responses(sessions, dataset.id)[:6]:
        runs.record_grade(sessions, run.id, response.id, judge_report(
            CRITERIA, [M, U, M, C], ScoringSettings(), response.output))


def _panel_deleted(sessions, version, dataset):
    panels.delete_panel(sessions, panels.list_panels(
        sessions, dataset_id=dataset.id, rubric_version_id=version.id)[0].id, actor=ADMIN)


def _keys_changed(sessions, version, dataset):
    """Rows stored for other judges under the same stamp (as by code counting otherwise)."""
    with sessions() as session, session.begin():
        session.execute(update(m.JudgePatternSetRow).values(keys=["run:999"]))


def _format_changed(sessions, version, dataset):
    with sessions() as session, session.begin():
        session.execute(update(m.JudgePatternSetRow).values(
            stamp=m.JudgePatternSetRow.stamp + " "))


@pytest.mark.parametrize("change", [
    pytest.param(_run_added, id="a run is added"),
    pytest.param(_panel_deleted, id="a panel is deleted"),
    pytest.param(_keys_changed, id="stored for other judges"),
    pytest.param(_format_changed, id="stored in another format"),
])
def test_stored_rows_that_are_not_current_are_counted_again_and_replaced(
        sessions, copied_world, monkeypatch, change):
    # one world for the five changes: built once per backend, then copied
    version, dataset = copied_world(("random_world", 35, 20),
                                    lambda s: _random_world(s, 35, responses=20))
    agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    change(sessions, version, dataset)
    counts = Calls(monkeypatch, agreement_judge_store, "judge_patterns")

    found = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)

    assert counts.calls == 1
    _same_count(agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id), found)
    assert agreement_judge_store.kept_patterns(sessions, version.id, dataset.id) == found
    assert counts.calls == 1 and _stored_sets(sessions) == 1  # the replaced set read back


def test_nothing_is_kept_while_a_panel_is_unsettled(sessions, monkeypatch):
    version, dataset = _random_world(sessions, 36, responses=10)
    agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    unsettled_panel(sessions, version, dataset)

    assert agreement_judge_store.kept_patterns(sessions, version.id, dataset.id) is None


def test_a_set_is_stored_per_rubric_version_and_dataset(sessions):
    one, d1 = _random_world(sessions, 37, responses=10)
    two, d2 = _random_world(sessions, 38, responses=12)

    a = agreement_judge_store.kept_patterns(sessions, one.id, d1.id)
    b = agreement_judge_store.kept_patterns(sessions, two.id, d2.id)

    assert _stored_sets(sessions) == 2
    assert agreement_judge_store.kept_patterns(sessions, one.id, d1.id) == a
    assert agreement_judge_store.kept_patterns(sessions, two.id, d2.id) == b
    assert a.rows != b.rows


def test_a_database_locked_by_a_writer_does_not_fail_the_read(sessions, db_url, monkeypatch):
    """SQLite: another process holds the write lock past the busy timeout while the page
    stores the count it made. The page gets the rows counted now (no error), nothing half
    stored; the next read, once the lock is gone, stores them."""
    if not db_url.startswith("sqlite"):
        pytest.skip("a writer holding the database's lock is SQLite's case")
    import sqlite3

    from sqlalchemy.engine import make_url

    from storage import engine as engine_module

    version, dataset = _random_world(sessions, 34, responses=20)
    monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 200)
    page = make_session_factory(create_db_engine(db_url, connect_args={"timeout": 0.2}))
    counts = Calls(monkeypatch, agreement_judge_store, "judge_patterns")
    writer = sqlite3.connect(make_url(db_url).database, timeout=5, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        while_locked = agreement_judge_store.kept_patterns(page, version.id, dataset.id)
        assert while_locked is not None and while_locked.rows
        assert counts.calls == 1
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert _stored_sets(sessions) == 0
    again = agreement_judge_store.kept_patterns(page, version.id, dataset.id)
    assert counts.calls == 2 and _stored_sets(sessions) == 1
    assert again.rows == while_locked.rows
    assert agreement_judge_store.kept_patterns(page, version.id, dataset.id).rows == again.rows
    assert counts.calls == 2
    page.kw["bind"].dispose()


def test_a_stored_value_this_code_cannot_read_is_counted_again_and_replaced(
        sessions, monkeypatch):
    """A stored value cut short (or written by other code under the same stamp) is not
    read as rows: the count is made again and stored in its place."""
    version, dataset = _random_world(sessions, 39, responses=20)
    first = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    with sessions() as session, session.begin():
        session.execute(update(m.JudgePatternSetRow).values(rows=b"\x01\x02"))
    counts = Calls(monkeypatch, agreement_judge_store, "judge_patterns")

    found = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)

    assert counts.calls == 1
    _same_count(first, found)
    assert agreement_judge_store.kept_patterns(sessions, version.id, dataset.id) == found
    assert counts.calls == 1 and _stored_sets(sessions) == 1
