"""The Agreement page's readers keep the judges' share of a disagreement list by the judges'
stamp: a saved verdict or an adjudication lists again without reading it (and lists what
every verdict gives), a grade landing reads it anew (the kept one would be stale); a blind
reviewer's report comes from the kept report's count, with the figures of every verdict.
The judges' pattern count is read to make their inputs and then let go (issue 41: ~40 MB
at 100,000 responses held beside the inputs made from it)."""

from __future__ import annotations

import gc
from dataclasses import replace

import pytest

from grading.types import Verdict
from storage.config import database_url
from storage.engine import open_database
from storage.services import (
    agreement,
    agreement_blind,
    agreement_judge_store,
    agreement_lists,
    blindness,
    reviews,
)
from storage.services.agreement import HUMAN
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.test_agreement_listing import _new_grade
from tests.storage.test_report_counts import _random_world
from tests.weak_results import watch_results

M, U = Verdict.MET, Verdict.UNMET


@pytest.fixture
def sessions():
    factory = open_database(database_url())
    yield factory
    factory.kw["bind"].dispose()


@pytest.fixture
def readers():
    from ui import agreement_readers

    agreement_readers.clear_after_import()
    yield agreement_readers
    agreement_readers.clear_after_import()


def _expected(sessions, version, dataset, keys, cid, sight=blindness.EVERYTHING):
    data = agreement_blind.as_seen(
        agreement.gather_sources(sessions, version.id, dataset.id), sight)
    return agreement.disagreements(data, list(keys), cid)


def test_a_verdict_lists_again_from_the_kept_share_and_a_grade_reads_it_anew(
        sessions, readers, monkeypatch):
    version, dataset = _random_world(sessions, 24, responses=40)
    db = database_url()
    read = []
    real = agreement_lists.judge_listing
    monkeypatch.setattr(agreement_lists, "judge_listing",
                        lambda *args: read.append(args[2:]) or real(*args))

    def listed(keys, cid):
        readers.get_stamp.clear()  # as 5 s later: the page sees what was written
        stamp = readers.get_stamp(db, version.id, dataset.id)
        return readers.get_disagreements(db, version.id, dataset.id, stamp,
                                         blindness.EVERYTHING, keys, cid)

    stamp = readers.get_stamp(db, version.id, dataset.id)
    report = readers.get_report(db, version.id, dataset.id, stamp)
    assert not report.data.complete
    keys = tuple(s.key for s in report.data.verdict_sources)
    pair = keys[1:3]
    cids = [c.id for c in version.criteria]
    for cid in cids:
        assert listed(keys, cid) == _expected(sessions, version, dataset, keys, cid)
    assert len(read) == len(cids)

    # People write: a verdict against the first run on a response nobody reviewed, an
    # adjudication. The lists change; the judges' share is not read again.
    before = [listed(keys, cid) for cid in cids]
    unreviewed = next(rid for rid in report.data.response_labels
                      if not any(r == rid for r, _ in report.data.verdicts[HUMAN]))
    for criterion in version.criteria:
        judged = report.data.verdicts[keys[1]].get((unreviewed, criterion.id))
        reviews.set_human_verdict(sessions, actor=local_actor("ana"),
                                  response_id=unreviewed, criterion_id=criterion.id,
                                  verdict=U if judged is M else M)
    (rid, cid), value = next(iter(report.data.verdicts[HUMAN].items()))
    reviews.adjudicate(sessions, actor=ADMIN, response_id=rid, criterion_id=cid,
                       verdict=U if value is M else M)
    after = [listed(keys, cid) for cid in cids]
    assert after == [_expected(sessions, version, dataset, keys, cid) for cid in cids]
    assert after != before
    assert len(read) == len(cids)

    # A grade lands: the judges' stamp moves, the share is read anew and the list is new.
    pair_before = [listed(pair, cid) for cid in cids]
    read.clear()
    _new_grade(sessions, version, dataset, report, keys)
    pair_after = [listed(pair, cid) for cid in cids]
    assert pair_after == [_expected(sessions, version, dataset, pair, cid) for cid in cids]
    assert pair_after != pair_before
    assert len(read) == len(cids)


def test_a_blind_reviewers_report_and_list_are_the_ones_every_verdict_gives(
        sessions, readers):
    version, dataset = _random_world(sessions, 31, responses=24)
    db = database_url()
    sight = blindness.as_reviewer(local_actor("bo").key)
    stamp = readers.get_stamp(db, version.id, dataset.id)
    seen = readers.get_report(db, version.id, dataset.id, stamp, sight)
    data = agreement_blind.as_seen(
        agreement.gather_sources(sessions, version.id, dataset.id), sight)
    python = agreement.build_report(data)
    assert not seen.data.complete  # from the kept count, not every verdict read again
    assert replace(seen, data=data) == python
    keys = tuple(s.key for s in data.verdict_sources)
    for criterion in version.criteria:
        assert readers.get_disagreements(
            db, version.id, dataset.id, stamp, sight, keys, criterion.id) == (
            agreement.disagreements(data, list(keys), criterion.id))


def test_the_judges_count_is_let_go_once_their_inputs_are_made(sessions, readers,
                                                               monkeypatch):
    version, dataset = _random_world(sessions, 26, responses=30)
    db, scope = database_url(), (version.id, dataset.id)
    counts = watch_results(monkeypatch, agreement_judge_store, "kept_patterns")
    report = readers.get_report(db, *scope, readers.get_stamp(db, *scope))

    assert readers.get_kept_slot(db, *scope).kept_of(report) is not None  # kept
    assert report == agreement.agreement_report(sessions, *scope)
    gc.collect()
    assert len(counts) == 1  # read once, to make the judges' inputs
    assert counts[0]() is None  # and not held after

    # a saved verdict patches the kept report: the count is not read again
    (rid, cid), now = next(iter(report.data.verdicts[agreement.HUMAN].items()))
    reviews.set_human_verdict(sessions, actor=local_actor("cy"), response_id=rid,
                              criterion_id=cid,
                              verdict=Verdict.UNMET if now == Verdict.MET else Verdict.MET)
    readers.get_stamp.clear()
    patched = readers.get_report(db, *scope, readers.get_stamp(db, *scope))
    assert patched is not report
    assert patched == agreement.agreement_report(sessions, *scope)
    assert len(counts) == 1
