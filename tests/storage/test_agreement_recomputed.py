"""The Agreement report as the page builds it (storage.services.agreement_kept.build: the
judges' stored inputs, people's rows read by agreement_people.read_rows and stored for the
next process) with its reads switched back to the recomputation from every verdict
(tests/storage/recomputed.py: reviewers through ``consensus.gather``, panels from every
PanelGrade) is the report read the switched way, and the rows it stores are the rows read
now: the switches the report's reads go through are exercised, not only listed. SQLite and
PostgreSQL."""

from __future__ import annotations

import pytest

from storage.services import agreement_kept, agreement_people_store, consensus
from storage.services.agreement_sources import data_stamp
from tests.storage.helpers import Calls, another_process
from tests.storage.recomputed import recomputed
from tests.storage.test_agreement_kept import _assert_is_the_report
from tests.storage.test_agreement_people import _assert_same_rows, _inputs, _rows_now, _stored
from tests.storage.test_report_counts import _random_world


@pytest.mark.parametrize("seed", [61, 62])
def test_the_report_built_on_the_recomputed_reads_is_the_report_of_the_switched_ones(
        sessions, db_url, monkeypatch, seed):
    version, dataset = _random_world(sessions, seed, responses=24)
    inputs = _inputs(sessions, version.id, dataset.id)
    assert inputs is not None and _stored(sessions) == 0
    gathered = Calls(monkeypatch, consensus, "gather")

    with recomputed():
        before = agreement_kept.build(sessions, version.id, dataset.id, inputs)
        rows_before = _rows_now(sessions, version.id, dataset.id)
    # people's rows were read (and stored) through the recomputation
    assert before is not None and gathered.calls > 0 and _stored(sessions) == 1
    _assert_is_the_report(sessions, version, dataset, before)
    assert rows_before.own

    # the switched reads give the very rows, and another process reads the stored ones back
    _assert_same_rows(rows_before, _rows_now(sessions, version.id, dataset.id))
    other = another_process(db_url)
    try:
        stamp = agreement_people_store.people_stamp(
            other, version.id, dataset.id, data_stamp(other, version.id, dataset.id))
        stored = agreement_people_store.read_stored(other, version.id, dataset.id, stamp)
        assert stored is not None
        _assert_same_rows(stored, rows_before)
        again = agreement_kept.build(other, version.id, dataset.id,
                                     _inputs(other, version.id, dataset.id))
        assert again is not None and again.report == before.report
    finally:
        other.kw["bind"].dispose()


def test_the_rows_advanced_over_a_verdict_go_through_the_recomputed_reviewers(
        sessions, db_url, monkeypatch):
    """A new process after a saved verdict advances the stored rows (the whole read
    refused): the reviewers' rows of the verdict's response come through the switched
    read too, and the report and the rows stored are the ones read now."""
    from sqlalchemy import select

    from grading.types import Verdict
    from storage import models as m
    from storage.services import agreement_sources, reviews
    from storage.services.reviewers import local_actor
    from tests.storage.test_agreement_people import _assert_stored_now, _refused

    version, dataset = _random_world(sessions, 63, responses=24)
    assert agreement_kept.build(sessions, version.id, dataset.id,
                                _inputs(sessions, version.id, dataset.id)) is not None
    with sessions() as session:
        reviewed = min(session.scalars(select(m.EffectiveVerdictRow.response_id).where(
            m.EffectiveVerdictRow.rubric_version_id == version.id)))
    reviews.set_human_verdict(sessions, actor=local_actor("bo"), response_id=reviewed,
                              criterion_id=version.criteria[0].id,
                              verdict=Verdict.CANNOT_ASSESS)
    other = another_process(db_url)
    try:
        inputs = _inputs(other, version.id, dataset.id)
        gathered = Calls(monkeypatch, consensus, "gather")
        with recomputed(), _refused(monkeypatch, agreement_sources, "read_rows"):
            built = agreement_kept.build(other, version.id, dataset.id, inputs)
        assert built is not None and gathered.calls > 0
        _assert_is_the_report(other, version, dataset, built)
        _assert_stored_now(other, monkeypatch, version, dataset)
    finally:
        other.kw["bind"].dispose()
