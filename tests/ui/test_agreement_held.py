"""What the Agreement page's readers keep in the app's process between runs (issue 41: the
app process under 500 MB at 100,000 responses). The judges' pattern count is read to make
their inputs and then let go (~40 MB at 100,000 responses): the kept report is patched from
the inputs, never from it."""

from __future__ import annotations

import gc
import weakref

import pytest

from grading.types import Verdict
from storage.config import database_url
from storage.engine import open_database
from storage.services import agreement, agreement_judge_store, reviews
from storage.services.reviewers import local_actor
from tests.storage.test_report_counts import _random_world


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


def test_the_judges_count_is_let_go_once_their_inputs_are_made(sessions, readers,
                                                               monkeypatch):
    version, dataset = _random_world(sessions, 26, responses=30)
    db, scope = database_url(), (version.id, dataset.id)
    counts: list = []
    real = agreement_judge_store.kept_patterns

    def kept_patterns(*args):
        found = real(*args)
        counts.append(weakref.ref(found))
        return found

    monkeypatch.setattr(agreement_judge_store, "kept_patterns", kept_patterns)
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
