"""People's side of the Agreement report kept in the database (storage.services.
agreement_people and agreement_people_store): stored by the report's build and read back by
another process as the very rows read now; after each kind of people's write (a verdict, a
second reviewer, an adjudication, a changed verdict, a verdict carried from an earlier
version) a new process advances the stored rows of the stamp before over the appended
verdicts, never reading them whole, and after a verdict deleted, a response added or a
criterion edited it reads them whole; either way its report is the report from every
verdict and the rows it stores are the rows read now; a busy database never fails the
read. SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import random

import pytest
from sqlalchemy import delete, func, insert, select, text

from grading.types import ScoringSettings, Verdict
from storage import models as m
from storage.engine import create_db_engine, make_session_factory
from storage.repositories import effective as effective_repo
from storage.services import (
    agreement_inputs_store,
    agreement_judge_counts,
    agreement_kept,
    agreement_people,
    agreement_people_store,
    agreement_sources,
    datasets,
    kept_rows,
    reviews,
    rubrics,
    runs,
)
from storage.services.agreement_sources import data_stamp
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import Calls, another_process, delete_oldest_verdict, judge_report
from tests.storage.test_agreement_blind_kept import SIGHTS, _assert_seen_as_every_verdict_gives
from tests.storage.test_agreement_kept import _assert_is_the_report, _writes
from tests.storage.test_report_counts import _random_world

M, U, C = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS



def _inputs(sessions, version_id, dataset_id):
    return agreement_inputs_store.kept_inputs(
        sessions, version_id, dataset_id,
        lambda: agreement_judge_counts.judge_patterns(sessions, version_id, dataset_id))


def _build(sessions, version_id, dataset_id):
    return agreement_kept.build(sessions, version_id, dataset_id,
                                _inputs(sessions, version_id, dataset_id))


def _stored(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.AgreementPeopleRow))


def _rows_now(sessions, version_id, dataset_id):
    with sessions() as session:
        run_ids = [r.id for r in runs.list_runs(sessions, rubric_version_id=version_id,
                                                dataset_id=dataset_id)]
        return agreement_people.read_rows(
            session, version_id, dataset_id, run_ids,
            effective_repo.reviewed_ids_query(version_id, dataset_id).order_by(None))


def _typed(values) -> list:
    """Values with their types: a Verdict equals the option text of the same letters."""
    return [(type(v), v) for v in values]


def _assert_same_rows(read, now) -> None:
    assert read == now
    assert list(read.labels.items()) == list(now.labels.items())
    assert _typed(r.choice for r in read.applied) == _typed(r.choice for r in now.applied)
    assert _typed(r.note for r in read.applied) == _typed(r.note for r in now.applied)
    assert _typed(x for r in read.own for x in r) == _typed(x for r in now.own for x in r)
    assert list(read.runs) == list(now.runs)
    for run_id, choices in now.runs.items():
        assert list(read.runs[run_id].items()) == list(choices.items())
        assert _typed(read.runs[run_id].values()) == _typed(choices.values())


@pytest.mark.parametrize("seed", [51, 52])
def test_the_stored_rows_read_by_another_process_are_the_rows_read_now(
        sessions, db_url, monkeypatch, seed):
    version, dataset = _random_world(sessions, seed, responses=30)
    made = _build(sessions, version.id, dataset.id)
    assert made is not None and _stored(sessions) == 1
    reads = Calls(monkeypatch, agreement_sources, "read_rows")

    other = another_process(db_url)
    try:
        stamp = agreement_people_store.people_stamp(
            other, version.id, dataset.id, data_stamp(other, version.id, dataset.id))
        read = agreement_people_store.read_stored(other, version.id, dataset.id, stamp)
        now = _rows_now(other, version.id, dataset.id)
        assert reads.calls == 0 and read is not None
        assert len(now.own) > 20 and len(now.applied) > 20 and len(now.runs) == 3
        assert any(now.runs.values()) and any(r.review_seconds is None for r in now.own)
        _assert_same_rows(read, now)

        built = _build(other, version.id, dataset.id)
        assert reads.calls == 0  # the stored rows, none read again
        assert built is not None and built.report == made.report
        _assert_is_the_report(other, version, dataset, built)
        for sight in SIGHTS:  # a blind reviewer's report from it
            _assert_seen_as_every_verdict_gives(other, version, dataset, built, sight)
    finally:
        other.kw["bind"].dispose()


def _carried_writes(sessions, version, dataset):
    """A second version carrying every criterion but the last from ``version``, graded by a
    run of its own, then verdicts saved on ``version`` (they carry into it): the report of
    the second version, (what, the write)."""
    rng = random.Random(7)
    criteria = version.to_criteria()
    criteria[-1] = criteria[-1].model_copy(
        update={"requirement": f"{criteria[-1].requirement} (reworded)"})
    second = rubrics.save_criteria(sessions, version.id, criteria, actor=ADMIN)
    assert second.id != version.id
    run = runs.create_run(sessions, rubric_version_id=second.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/j9", actor=ADMIN)
    for response in datasets.list_responses(sessions, dataset.id):
        verdicts = [rng.choice([M, U]) for _ in criteria]
        runs.record_grade(sessions, run.id, response.id, judge_report(
            criteria, verdicts, ScoringSettings(), response.output))
    runs.start_run(sessions, run.id, worker="t")
    runs.finish_run(sessions, run.id)
    with sessions() as session:
        reviewed = sorted(set(session.scalars(select(m.EffectiveVerdictRow.response_id).where(
            m.EffectiveVerdictRow.rubric_version_id == second.id))))

    def on_first(person, rid, value):
        return lambda: reviews.set_human_verdict(
            sessions, actor=local_actor(person), response_id=rid,
            criterion_id=version.criteria[0].id, verdict=value)

    return second, [("a verdict carried from the version before",
                     on_first("ana", reviewed[0], C)),
                    ("a verdict carried onto a response",
                     on_first("bo", reviewed[-1], U))]


class _Refused(Exception):
    pass


@contextlib.contextmanager
def _refused(monkeypatch, owner, name: str):
    """``owner.name`` raises inside the block: the path that calls it is not taken."""
    real = getattr(owner, name)

    def refuse(*_args, **_kwargs):
        raise _Refused(f"{name} was called")

    monkeypatch.setattr(owner, name, refuse)
    try:
        yield
    finally:
        monkeypatch.setattr(owner, name, real)


def _assert_stored_now(sessions, monkeypatch, version, dataset) -> None:
    """The rows stored are at the current stamp (read back, none read again) and are the
    rows a whole read gives now."""
    stamp = agreement_people_store.people_stamp(
        sessions, version.id, dataset.id, data_stamp(sessions, version.id, dataset.id))
    with _refused(monkeypatch, agreement_people_store, "read_touched"):
        read = agreement_people_store.read_stored(sessions, version.id, dataset.id, stamp)
    assert read is not None
    _assert_same_rows(read, _rows_now(sessions, version.id, dataset.id))


@pytest.mark.parametrize("seed", [53])
def test_after_each_appended_verdict_a_new_process_advances_the_stored_rows(
        sessions, copied_world, db_url, monkeypatch, seed):
    """Each kind of people's write appends verdicts: a new process reads the stored rows and
    only the responses those verdicts are on (the whole read refused), stores the rows at
    the new stamp, and its report is the report from every verdict. The second version's
    rows are advanced over every write before the carried ones at once."""
    version, dataset = copied_world(("random_world", seed, 24),
                                    lambda s: _random_world(s, seed, responses=24))
    assert _build(sessions, version.id, dataset.id) is not None
    second, carried = _carried_writes(sessions, version, dataset)
    assert _build(sessions, second.id, dataset.id) is not None and _stored(sessions) == 2
    touched = Calls(monkeypatch, agreement_people_store, "read_touched")
    writes = [*((what, write, version) for what, write in _writes(
        sessions, version, dataset, seed)),
        *((what, write, second) for what, write in carried)]

    for what, write, which in writes:
        write()
        other = another_process(db_url)
        try:
            before = touched.calls
            with _refused(monkeypatch, agreement_sources, "read_rows"):
                built = _build(other, which.id, dataset.id)
            assert built is not None, what
            assert touched.calls == before + 1, what  # advanced, not read whole
            _assert_stored_now(other, monkeypatch, which, dataset)
            _assert_is_the_report(other, which, dataset, built)
            with (_refused(monkeypatch, agreement_sources, "read_rows"),
                  _refused(monkeypatch, agreement_people_store, "read_touched")):
                again = _build(other, which.id, dataset.id)  # stored at the new stamp
            assert again is not None and again.report == built.report, what
        finally:
            other.kw["bind"].dispose()


def _deleted(sessions, version, dataset):
    delete_oldest_verdict(sessions)


def _response_added(sessions, version, dataset):
    datasets.add_response(sessions, dataset.id, "a late answer", external_id="late",
                          actor=ADMIN)


def _criterion_edited(sessions, version, dataset):
    """What replacing an unfrozen version's criteria does to the stamp's digest (a run's
    version is frozen: its row changed directly)."""
    with sessions.begin() as session:
        session.execute(m.CriterionRow.__table__.update()
                        .where(m.CriterionRow.id == version.criteria[0].id)
                        .values(name="renamed"))


@pytest.mark.parametrize("change", [_deleted, _response_added, _criterion_edited])
def test_a_verdict_appended_beside_another_change_reads_the_rows_whole(
        sessions, copied_world, db_url, monkeypatch, change):
    """A deletion, a response added or a criterion edited, with verdicts appended after
    it: the stored rows are not advanced; a new process reads them whole, stores them at
    the new stamp and its report is the report from every verdict."""
    version, dataset = copied_world(("random_world", 57, 16),
                                    lambda s: _random_world(s, 57, responses=16))
    assert _build(sessions, version.id, dataset.id) is not None
    with sessions() as session:
        reviewed = min(session.scalars(select(m.EffectiveVerdictRow.response_id).where(
            m.EffectiveVerdictRow.rubric_version_id == version.id)))
    change(sessions, version, dataset)
    for criterion in version.criteria[1:3]:  # two: the number grows past a deletion
        reviews.set_human_verdict(sessions, actor=local_actor("bo"), response_id=reviewed,
                                  criterion_id=criterion.id, verdict=C)
    reads = Calls(monkeypatch, agreement_sources, "read_rows")
    other = another_process(db_url)
    try:
        with _refused(monkeypatch, agreement_people_store, "read_touched"):
            built = _build(other, version.id, dataset.id)
        assert built is not None and reads.calls == 1  # read whole
        _assert_stored_now(other, monkeypatch, version, dataset)
        _assert_is_the_report(other, version, dataset, built)
    finally:
        other.kw["bind"].dispose()


def test_a_verdict_written_while_advancing_reads_whole_and_stores_nothing_stale(
        sessions, db_url, monkeypatch):
    """A verdict saved while a new process advances the rows over the one before: the
    advanced rows are dropped (the stamp moved while reading) and read whole, nothing is
    stored at a stamp that is not the rows'; the next process advances over both."""
    version, dataset = _random_world(sessions, 58, responses=16)
    assert _build(sessions, version.id, dataset.id) is not None
    with sessions() as session:
        first, second = sorted(set(session.scalars(select(m.EffectiveVerdictRow.response_id)
                                                   .where(m.EffectiveVerdictRow
                                                          .rubric_version_id == version.id))))[:2]

    def verdict(rid):
        reviews.set_human_verdict(sessions, actor=local_actor("bo"), response_id=rid,
                                  criterion_id=version.criteria[0].id, verdict=C)

    verdict(first)
    real = agreement_people_store.read_touched

    def touched_then_written(*args, **kwargs):
        found = real(*args, **kwargs)
        verdict(second)  # saved while this process reads
        return found

    reads = Calls(monkeypatch, agreement_sources, "read_rows")
    other = another_process(db_url)
    try:
        with monkeypatch.context() as patched:
            patched.setattr(agreement_people_store, "read_touched", touched_then_written)
            _build(other, version.id, dataset.id)  # None: its stamp moved while building
        assert reads.calls == 1  # the advanced rows dropped, read whole
        now = agreement_people_store.people_stamp(
            other, version.id, dataset.id, data_stamp(other, version.id, dataset.id))
        with sessions() as session:  # still the rows of the stamp before both verdicts
            stored = session.scalar(select(m.AgreementPeopleRow.stamp))
            assert agreement_people_store.appended_since(
                session, dataset.id, stored, now) == [first, second]
        with _refused(monkeypatch, agreement_sources, "read_rows"):
            built = _build(other, version.id, dataset.id)
        assert built is not None
        _assert_stored_now(other, monkeypatch, version, dataset)
        _assert_is_the_report(other, version, dataset, built)
    finally:
        other.kw["bind"].dispose()


@pytest.mark.parametrize("seed", [53])
def test_after_a_deleted_verdict_a_new_process_makes_the_report_from_every_verdict(
        sessions, copied_world, db_url, monkeypatch, seed):
    version, dataset = copied_world(("random_world", seed, 24),
                                    lambda s: _random_world(s, seed, responses=24))
    assert _build(sessions, version.id, dataset.id) is not None
    reads = Calls(monkeypatch, agreement_sources, "read_rows")
    delete_oldest_verdict(sessions)
    other = another_process(db_url)
    try:
        built = _build(other, version.id, dataset.id)
        assert built is not None and reads.calls == 1  # not the rows stored before
        _assert_is_the_report(other, version, dataset, built)
        before = reads.calls
        again = _build(other, version.id, dataset.id)
        assert reads.calls == before  # stored at the new stamp, read back
        assert again is not None and again.report == built.report
    finally:
        other.kw["bind"].dispose()


def test_a_response_added_to_the_dataset_moves_the_stamp_and_shows_its_label(
        sessions, monkeypatch):
    version, dataset = _random_world(sessions, 54, responses=12)
    assert _build(sessions, version.id, dataset.id) is not None
    stamp = agreement_people_store.people_stamp(
        sessions, version.id, dataset.id, data_stamp(sessions, version.id, dataset.id))
    late = datasets.add_response(sessions, dataset.id, "a late answer", external_id="late",
                                 actor=ADMIN)
    later = agreement_people_store.people_stamp(
        sessions, version.id, dataset.id, data_stamp(sessions, version.id, dataset.id))
    reads = Calls(monkeypatch, agreement_sources, "read_rows")
    built = _build(sessions, version.id, dataset.id)

    assert later != stamp and later[0] == stamp[0]  # the labels move it, not the data stamp
    assert built.report.data.response_labels.get(late.id) == "late"
    _assert_is_the_report(sessions, version, dataset, built)
    assert reads.calls >= 1


def test_a_database_locked_by_a_writer_does_not_fail_the_read(sessions, db_url, monkeypatch):
    """SQLite: another process holds the write lock past the busy timeout while the page
    stores people's rows it read. The page gets its report (no error), nothing stored; the
    next read, once the lock is gone, stores them."""
    if not db_url.startswith("sqlite"):
        pytest.skip("a writer holding the database's lock is SQLite's case")
    import sqlite3

    from sqlalchemy.engine import make_url

    from storage import engine as engine_module

    version, dataset = _random_world(sessions, 55, responses=20)
    inputs = _inputs(sessions, version.id, dataset.id)
    monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 200)
    page = make_session_factory(create_db_engine(db_url, connect_args={"timeout": 0.2}))
    writer = sqlite3.connect(make_url(db_url).database, timeout=5, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        while_locked = agreement_kept.build(page, version.id, dataset.id, inputs)
        assert while_locked is not None
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert _stored(sessions) == 0
    again = agreement_kept.build(page, version.id, dataset.id, inputs)
    assert _stored(sessions) == 1 and again.report == while_locked.report
    _assert_is_the_report(page, version, dataset, again)
    page.kw["bind"].dispose()


def test_stored_rows_this_code_cannot_read_are_read_again_and_replaced(sessions):
    version, dataset = _random_world(sessions, 56, responses=12)
    made = _build(sessions, version.id, dataset.id)
    with sessions.begin() as session:
        session.execute(m.AgreementPeopleRow.__table__.update().values(
            figures='{"$c": ["os:path", {}]}'))
    assert _stored(sessions) == 1
    built = _build(sessions, version.id, dataset.id)

    assert built is not None and built.report == made.report
    stamp = agreement_people_store.people_stamp(
        sessions, version.id, dataset.id, data_stamp(sessions, version.id, dataset.id))
    assert agreement_people_store.read_stored(sessions, version.id, dataset.id,
                                              stamp) is not None  # replaced


def test_postgresql_compresses_the_kept_rows_with_lz4_and_reads_older_ones_back(sessions,
                                                                                db_url):
    """PostgreSQL: a kept row's megabytes are compressed with lz4 where the server has it
    (its default, pglz, took ~0.35 s for the people's rows at 100,000 responses), for that
    write only; a row stored before with pglz reads back as ever."""
    if not db_url.startswith("postgresql"):
        pytest.skip("the compression of stored values is PostgreSQL's (TOAST)")
    version, dataset = _random_world(sessions, 57, responses=12)
    s = m.AgreementPeopleRow
    where = {"rubric_version_id": version.id, "dataset_id": dataset.id}
    figures, blob = "figures " * 50_000, bytes(range(256)) * 4_000  # 400 kB, 1 MB

    def stored():
        with sessions() as session:
            return session.execute(select(
                func.pg_column_compression(s.figures), func.pg_column_compression(s.arrays),
                s.figures, s.arrays).where(s.dataset_id == dataset.id)).one()

    with sessions.begin() as session:  # as the code before stored it
        session.execute(delete(s))
        session.execute(insert(s).values(**where, stamp="before", figures=figures,
                                         arrays=blob))
    assert tuple(stored()) == ("pglz", "pglz", figures, blob)

    assert kept_rows.replace(sessions, s, where,
                             {"stamp": "now", "figures": figures, "arrays": blob})
    with sessions() as session:
        has_lz4 = session.scalar(text(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings"
            " WHERE name = 'default_toast_compression'"))
        default = session.scalar(text("SHOW default_toast_compression"))
    method = "lz4" if has_lz4 else "pglz"
    assert tuple(stored()) == (method, method, figures, blob)
    assert default == "pglz"  # the connection's default, set back after that write


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_people_rows_without_the_runs_reasons_are_not_gathered_as_if_they_had_them(
        sessions):
    # People's rows hold the runs' choices only (a counted report holds none of the judges'
    # reasons): a gather asked for the judges' reasons with them says so, not gives none.
    version, dataset = _random_world(sessions, 53, responses=12)
    inputs = _inputs(sessions, version.id, dataset.id)
    rows = _rows_now(sessions, version.id, dataset.id)
    assert rows.runs and all(isinstance(c, dict) for c in rows.runs.values())
    with pytest.raises(ValueError, match="judge_reasons=False"):
        agreement_sources.gather_people(sessions, version.id, dataset.id, complete=False,
                                        stored=inputs.grades, rows=rows)
    data, _newest, _made = agreement_sources.gather_people(
        sessions, version.id, dataset.id, complete=False, stored=inputs.grades, rows=rows,
        judge_reasons=False)
    assert list(data.reasons) == ["human"]  # people's notes only
    assert any(data.verdicts[key] for key in data.verdicts if key != "human")
