"""The trust report's judges' share kept in the database (storage.services.trust_share_store,
issue 41): made and stored once, read back by another process as the very share made now
(the trust report built on it is the fresh one, figure for figure, and nothing of the judges
is made again); made again when a grade lands (the judges' stamp moves), a run is added, a
response is added or it was stored in another format; a writer holding SQLite's lock does
not fail the read. SQLite and PostgreSQL."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import func, select, update

from grading.types import ScoringSettings, Verdict
from storage import models as m
from storage.engine import create_db_engine, make_session_factory
from storage.services import (
    agreement,
    datasets,
    human_baseline,
    reviews,
    runs,
    trust_report,
    trust_share_codec,
    trust_share_store,
)
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, Calls, another_process, judge_report
from tests.storage.test_trust_counted import _world


def _trust(sessions, report, judges=None):
    return trust_report.build_trust(sessions, report, human_baseline.report_baseline(report),
                                    judges)



def _stored_sets(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.TrustShareRow))


def _read(sessions, version, dataset):
    """(the judges' stamp, then the full report built after it), as the page reads them."""
    stamp = trust_share_store.current_stamp(sessions, version.id, dataset.id)
    return stamp, agreement.agreement_report(sessions, version.id, dataset.id)


def _same_share(a, b) -> None:
    """Every array equal with its dtype and shape, every other value equal by repr (numpy
    scalars stay numpy scalars)."""
    assert a.frame.positions == b.frame.positions
    for x, y in ((a.frame.ids, b.frame.ids), (a.frame.lengths, b.frame.lengths),
                 *((a.shares[k].codes, b.shares[k].codes) for k in a.shares)):
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    assert list(a.shares) == list(b.shares)
    assert repr(a.reads) == repr(b.reads)
    assert [repr(s.criteria) for s in a.shares.values()] == [
        repr(s.criteria) for s in b.shares.values()]
    assert [repr((s.score, s.scored, s.pairwise, s.samples, s.replayed, s.basis))
            for s in a.shares.values()] == [
        repr((s.score, s.scored, s.pairwise, s.samples, s.replayed, s.basis))
        for s in b.shares.values()]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_new_process_reads_the_stored_share_as_the_share_made_now(
        sessions, db_url, seed, monkeypatch):
    version, dataset = _world(sessions, seed)
    stamp, report = _read(sessions, version, dataset)
    assert not report.data.complete
    made = trust_share_store.kept_share(sessions, report, stamp)
    assert _stored_sets(sessions) == 1

    other = another_process(db_url)
    stamp_there, report_there = _read(other, version, dataset)
    assert stamp_there == stamp
    counted = Calls(monkeypatch, trust_report, "judges_part")
    read = trust_share_store.kept_share(other, report_there, stamp_there)
    assert counted.calls == 0  # read back, not made again
    monkeypatch.undo()

    _same_share(read, made)
    fresh = _trust(other, report_there)
    assert repr(_trust(other, report_there, read)) == repr(fresh)
    assert repr(_trust(sessions, report, made)) == repr(fresh)
    other.kw["bind"].dispose()


def test_the_stored_share_read_after_a_verdict_gives_the_fresh_report(sessions, db_url):
    """People's verdicts do not move the judges' stamp: the stored share serves the report
    of the new verdicts, as the fresh trust report of them."""
    version, dataset = _world(sessions, 3)
    stamp, report = _read(sessions, version, dataset)
    trust_share_store.kept_share(sessions, report, stamp)
    response = min(report.data.response_labels)
    reviews.set_human_verdict(sessions, actor=local_actor("late"), response_id=response,
                              criterion_id=report.data.criteria[0].id, verdict="MET")
    after_stamp, after = _read(sessions, version, dataset)
    assert after_stamp == stamp
    other = another_process(db_url)
    read = trust_share_store.kept_share(other, after, after_stamp)
    assert repr(_trust(other, after, read)) == repr(_trust(other, after))
    other.kw["bind"].dispose()


def _an_ungraded_response(sessions, report, run_id: int) -> int:
    with sessions() as session:
        graded = set(session.scalars(select(m.GradeRow.response_id)
                                     .where(m.GradeRow.run_id == run_id)))
    return min(set(report.data.response_labels) - graded)


def _a_grade_lands(sessions, report) -> None:
    """The report's first run grades a response it had no grade for (the judges move)."""
    run_id = next(s.run_id for s in report.data.sources if s.run_id is not None)
    response = _an_ungraded_response(sessions, report, run_id)
    output = datasets.get_response(sessions, response).output
    runs.record_grade(sessions, run_id, response, judge_report(
        CRITERIA, [Verdict.MET] * len(CRITERIA), ScoringSettings(), output))


def test_a_grade_landing_moves_the_stamp_and_the_stale_share_is_never_used(
        sessions, monkeypatch):
    version, dataset = _world(sessions, 4)
    stamp, report = _read(sessions, version, dataset)
    stale = trust_share_store.kept_share(sessions, report, stamp)
    _a_grade_lands(sessions, report)

    moved, after = _read(sessions, version, dataset)
    assert moved != stamp
    fresh = _trust(sessions, after)
    assert repr(_trust(sessions, after, stale)) != repr(fresh)  # the stale one would show
    counted = Calls(monkeypatch, trust_report, "judges_part")
    # a caller still holding the old stamp (its report is the new one): the share stored at
    # that stamp is not used, nor is the one made now stored under it
    held = trust_share_store.kept_share(sessions, after, stamp)
    assert counted.calls == 1
    found = trust_share_store.kept_share(sessions, after, moved)
    assert counted.calls == 2  # made again at the new stamp
    monkeypatch.undo()
    assert repr(_trust(sessions, after, held)) == repr(fresh)
    assert repr(_trust(sessions, after, found)) == repr(fresh)
    # the new one was stored in its place and is what a later read gets
    counted = Calls(monkeypatch, trust_report, "judges_part")
    again = trust_share_store.kept_share(sessions, after, moved)
    assert counted.calls == 0 and _stored_sets(sessions) == 1
    _same_share(again, found)


def test_a_report_read_at_the_stamp_gets_the_share_stored_there_after_the_judges_moved(
        sessions, monkeypatch):
    """A caller that knows its report was read at ``stamp`` (``built_at``: a kept report)
    gets the share stored at ``stamp`` without the current stamp being read, even once a
    grade has landed; a report read at another stamp is made as before."""
    version, dataset = _world(sessions, 6)
    stamp, report = _read(sessions, version, dataset)
    made = trust_share_store.kept_share(sessions, report, stamp)
    _a_grade_lands(sessions, report)
    moved, after = _read(sessions, version, dataset)
    assert moved != stamp

    counted = Calls(monkeypatch, trust_report, "judges_part")
    stamps = Calls(monkeypatch, trust_share_store, "current_stamp")
    read = trust_share_store.kept_share(sessions, report, stamp, built_at=stamp)
    assert counted.calls == 0 and stamps.calls == 0
    monkeypatch.undo()
    _same_share(read, made)  # the share of ``report`` as it was made with it
    assert repr(_trust(sessions, report, read)) == repr(_trust(sessions, report, made))

    counted = Calls(monkeypatch, trust_report, "judges_part")
    held = trust_share_store.kept_share(sessions, after, stamp, built_at=moved)
    assert counted.calls == 1  # read at another stamp: not the stored one
    monkeypatch.undo()
    assert repr(_trust(sessions, after, held)) == repr(_trust(sessions, after))


def _run_added(sessions, version, dataset):
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/j9", actor=ADMIN)
    for response in datasets.list_responses(sessions, dataset.id, limit=None)[:10]:
        runs.record_grade(sessions, run.id, response.id, judge_report(
            CRITERIA, [Verdict.MET] * len(CRITERIA), ScoringSettings(), response.output))
    runs.start_run(sessions, run.id, worker="t")
    runs.finish_run(sessions, run.id)


def _response_added(sessions, version, dataset):
    added = datasets.add_response(sessions, dataset.id, "a late answer", actor=ADMIN)
    reviews.set_human_verdict(sessions, actor=local_actor("late"), response_id=added.id,
                              criterion_id=version.criteria[0].id, verdict="MET")


def _format_changed(sessions, version, dataset):
    with sessions.begin() as session:
        session.execute(update(m.TrustShareRow).values(
            stamp=m.TrustShareRow.stamp + " "))


def _shape_unknown(sessions, version, dataset):
    """Stored by code whose classes had other fields: read as not stored."""
    with sessions.begin() as session:
        figures = session.scalar(select(m.TrustShareRow.figures))
        session.execute(update(m.TrustShareRow).values(
            figures=figures.replace('"source_key":', '"judge_key":')))


@pytest.mark.parametrize("change", [
    pytest.param(_run_added, id="a run added"),
    pytest.param(_response_added, id="a response added"),
    pytest.param(_format_changed, id="stored in another format"),
    pytest.param(_shape_unknown, id="stored with other fields"),
])
def test_a_stored_share_that_is_not_current_is_made_again_and_replaced(
        sessions, monkeypatch, change):
    version, dataset = _world(sessions, 5, responses=20)
    stamp, report = _read(sessions, version, dataset)
    trust_share_store.kept_share(sessions, report, stamp)
    change(sessions, version, dataset)
    stamp, after = _read(sessions, version, dataset)
    counted = Calls(monkeypatch, trust_report, "judges_part")

    found = trust_share_store.kept_share(sessions, after, stamp)

    assert counted.calls == 1
    monkeypatch.undo()
    assert repr(_trust(sessions, after, found)) == repr(_trust(sessions, after))
    counted = Calls(monkeypatch, trust_report, "judges_part")
    _same_share(trust_share_store.kept_share(sessions, after, stamp), found)
    assert counted.calls == 0 and _stored_sets(sessions) == 1  # the replaced one read back


def test_a_database_locked_by_a_writer_does_not_fail_the_read(sessions, db_url, monkeypatch):
    """SQLite: another process holds the write lock past the busy timeout while the page
    stores the share it made. The page gets the share made now (no error), nothing stored;
    the next read, once the lock is gone, stores it."""
    if not db_url.startswith("sqlite"):
        pytest.skip("a writer holding the database's lock is SQLite's case")
    import sqlite3

    from sqlalchemy.engine import make_url

    from storage import engine as engine_module

    version, dataset = _world(sessions, 6, responses=20)
    monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 200)
    page = make_session_factory(create_db_engine(db_url, connect_args={"timeout": 0.2}))
    stamp, report = _read(page, version, dataset)
    counted = Calls(monkeypatch, trust_report, "judges_part")
    writer = sqlite3.connect(make_url(db_url).database, timeout=5, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        while_locked = trust_share_store.kept_share(page, report, stamp)
        assert counted.calls == 1
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert _stored_sets(sessions) == 0
    again = trust_share_store.kept_share(page, report, stamp)
    assert counted.calls == 2 and _stored_sets(sessions) == 1
    _same_share(again, while_locked)
    trust_share_store.kept_share(page, report, stamp)
    assert counted.calls == 2
    page.kw["bind"].dispose()


def test_numbers_read_back_bit_for_bit_with_their_types():
    """The codec on the values a share holds: numpy scalars stay numpy, NaN and signed zero
    and the last bit of a double survive, enum keys and tuples stay what they were."""
    from grading.trust.figures import Figure
    from storage.services.trust_frame import make_frame
    from storage.services.trust_judges import TrustJudges
    from storage.services.trust_reads import Reads

    frame = make_frame([], {3: 10, 1: 0, 2: None})
    frame.lookup = {(7, Verdict.MET): (0, 1)}
    odd = (np.float64(0.1) + np.float64(0.2), float("nan"), -0.0, 1e-310, np.int64(7),
           np.bool_(True), Figure(0.30000000000000004, None, float("inf"), 3))
    share = TrustJudges(rubric_version_id=1, dataset_id=2, frame=frame, reads=Reads(
        lengths={}, sample=frozenset(), sample_size=0, replayed=frozenset({5, 3}),
        shuffles={}, population=odd), shares={})
    back = trust_share_codec.decode_share(*trust_share_codec.encode(share))
    assert repr(back.reads) == repr(share.reads)
    assert [type(v) for v in back.reads.population] == [type(v) for v in odd]
    assert np.float64(0.1) + np.float64(0.2) == back.reads.population[0]
    assert str(back.reads.population[2]) == "-0.0"
    assert back.frame.lookup == {(7, Verdict.MET): (0, 1)}
    assert type(next(iter(back.frame.lookup))[1]) is Verdict
    assert back.frame.positions == {1: 0, 2: 1, 3: 2}
    assert back.frame.lengths.tobytes() == frame.lengths.tobytes()
    with pytest.raises(TypeError):
        trust_share_codec.encode(TrustJudges(1, 2, frame, share.reads, {"x": object()}))
