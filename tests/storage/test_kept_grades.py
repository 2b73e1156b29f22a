"""The kept Agreement report advanced over landed grades (storage.services.agreement_kept.
advance with the judges' inputs advanced over the same grades, agreement_inputs.advanced):
the responses graded again that people reviewed are read again, the judges' rows move as
their inputs say, the sources' grades, tokens and scores are the inputs' — and the report is
the whole one, dict for dict, without reading people's side whole. Judges made anew (read
back by another process, advanced twice, another judge) build it anew. SQLite and
PostgreSQL."""

from __future__ import annotations

from itertools import islice

import pytest

from storage.services import agreement_kept, agreement_sources
from tests.storage.helpers import another_process
from tests.storage.test_agreement_kept import _assert_is_the_report, _writes
from tests.storage.test_agreement_people import _refused
from tests.storage.test_inputs_advance import (
    _grade_and_verdict,
    _kept,
    _raising,
    _reviewed_failure_re_graded,
    _reviewed_response_graded,
)
from tests.storage.test_judge_advance import LANDINGS, M, U, _new_response_graded
from tests.storage.test_report_counts import _random_world


def _world(copied_world, seed: int = 46):
    return copied_world(("random_world", seed, 30),
                        lambda s: _random_world(s, seed, responses=30))


_ON_41 = {param.values[0] for param in LANDINGS}


@pytest.mark.parametrize("land", [
    *LANDINGS,
    pytest.param(_reviewed_response_graded, id="a reviewed response graded"),
    pytest.param(_reviewed_failure_re_graded, id="a reviewed response's failure re-graded"),
    pytest.param(_grade_and_verdict, id="a grade and a verdict"),
])
def test_the_kept_report_advanced_over_landed_grades_is_the_whole_report(
        sessions, copied_world, monkeypatch, land):
    # (the landings of test_judge_advance on its world: two responses left ungraded there)
    version, dataset = _world(copied_world, 41 if land in _ON_41 else 46)
    if land is _reviewed_failure_re_graded:
        _reviewed_response_graded(sessions, version, dataset, (U, None, M, None), True)
    before = _kept(sessions, version, dataset)
    kept = agreement_kept.build(sessions, version.id, dataset.id, before)
    assert kept is not None
    land(sessions, version, dataset)
    inputs = _kept(sessions, version, dataset, _raising)  # advanced, not made whole
    assert inputs.since is not None and inputs.since.stamp == before.stamp

    with _refused(monkeypatch, agreement_sources, "read_rows"):  # people's side not read
        patched = agreement_kept.advance(sessions, kept, inputs)
    assert patched is not None and patched.stamp != kept.stamp
    assert patched.judges is inputs and patched.report.data.sources != kept.report.data.sources
    _assert_is_the_report(sessions, version, dataset, patched)
    for what, write in islice(_writes(sessions, version, dataset, 46), 3):
        write()  # people's verdicts after it patch it as before
        patched = agreement_kept.advance(sessions, patched, inputs)
        assert patched is not None, what
        _assert_is_the_report(sessions, version, dataset, patched)


def test_the_slot_advances_over_a_grade_without_building(sessions, copied_world, monkeypatch):
    version, dataset = _world(copied_world)
    slot = agreement_kept.KeptSlot()
    slot.report(sessions, version.id, dataset.id, _kept(sessions, version, dataset))
    _reviewed_response_graded(sessions, version, dataset)

    def build(*_args):
        raise AssertionError("built anew, not advanced")

    monkeypatch.setattr(agreement_kept, "build", build)
    report = slot.report(sessions, version.id, dataset.id,
                         _kept(sessions, version, dataset, _raising))
    assert slot._kept is not None and slot._kept.report is report
    _assert_is_the_report(sessions, version, dataset, slot._kept)


def test_judges_not_advanced_from_the_kept_ones_build_the_report_anew(
        sessions, copied_world, db_url):
    version, dataset = _world(copied_world)
    kept = agreement_kept.build(sessions, version.id, dataset.id,
                                _kept(sessions, version, dataset))
    _new_response_graded(sessions, version, dataset)
    other = another_process(db_url)
    try:  # read back by a new process at the new stamp: which grades landed is not known
        assert _kept(sessions, version, dataset, _raising).since is not None  # stored
        read = _kept(other, version, dataset, _raising)
    finally:
        other.kw["bind"].dispose()
    assert read.since is None
    assert agreement_kept.advance(sessions, kept, read) is None

    _reviewed_response_graded(sessions, version, dataset)  # advanced twice since the kept
    twice = _kept(sessions, version, dataset, _raising)
    assert twice.since is not None and twice.since.stamp != kept.judges.stamp
    assert agreement_kept.advance(sessions, kept, twice) is None
    rebuilt = agreement_kept.build(sessions, version.id, dataset.id, twice)
    _assert_is_the_report(sessions, version, dataset, rebuilt)
