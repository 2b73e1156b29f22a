"""The Agreement report's judges-only inputs (storage.services.agreement_inputs and
agreement_inputs_store): made once per judges' stamp, stored and read back by another
process, the report built on them is the report built from the judges' rows (and the whole
one), patched after people's writes as well; at a moved judges' stamp the stored ones are
never used. SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import random

import pytest

from grading.types import Verdict
from storage.services import (
    agreement,
    agreement_inputs,
    agreement_inputs_store,
    agreement_judge_counts,
    agreement_kept,
)
from storage.services.agreement_folded import FoldedRows
from storage.services.score_column import ScoreColumn
from tests.storage.helpers import Calls, another_process
from tests.storage.test_agreement_blind_kept import SIGHTS, _assert_seen_as_every_verdict_gives
from tests.storage.test_agreement_judge_store import _panel_deleted, _run_added
from tests.storage.test_agreement_kept import _assert_is_the_report, _writes
from tests.storage.test_judge_advance import _new_response_graded as _grade_lands
from tests.storage.test_report_counts import _random_world

M, U, C = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS



def _kept(sessions, version, dataset):
    return agreement_inputs_store.kept_inputs(
        sessions, version.id, dataset.id,
        lambda: agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id))


@pytest.mark.parametrize("seed", [41, 42])
def test_the_report_on_the_stored_inputs_is_the_report_from_the_judges_rows(
        sessions, db_url, seed):
    version, dataset = _random_world(sessions, seed, responses=30)
    made = _kept(sessions, version, dataset)
    other = another_process(db_url)
    try:  # a new process reads them back, made by none of its own
        read = agreement_inputs_store.kept_inputs(other, version.id, dataset.id, lambda: None)
    finally:
        other.kw["bind"].dispose()
    judges = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)

    assert read is not None and read == made  # the folded count, every grade, the stamp
    assert read.folded == agreement_inputs.judges_folded(judges)
    assert len(read.folded.units) > 10  # units where the judges disagree among themselves
    assert {key for key in read.grades} == {s.key for s in agreement.agreement_report(
        sessions, version.id, dataset.id).data.sources if not s.is_human}

    on_inputs = agreement_kept.build(sessions, version.id, dataset.id, read)
    on_rows = agreement_kept.build(sessions, version.id, dataset.id, judges)
    assert on_inputs is not None and on_rows is not None
    assert on_inputs.report == on_rows.report and on_inputs.folded == on_rows.folded
    # people's units from the data held, as the reviewed responses' count gives them
    assert on_inputs.units == {rid: share for rid, share in on_rows.units.items() if share}
    assert sum(1 for share in on_inputs.units.values() for row in share if row[-2]) > 3
    assert any(isinstance(scores, ScoreColumn)
               for scores in on_inputs.report.data.judge_scores.values())
    for key, scores in on_rows.report.data.judge_scores.items():
        assert list(on_inputs.report.data.judge_scores[key].items()) == list(scores.items())
    _assert_is_the_report(sessions, version, dataset, on_inputs)

    kept = on_inputs  # people's writes patch the report built on the inputs
    for what, write in _writes(sessions, version, dataset, seed):
        write()
        patched = agreement_kept.advance(sessions, kept, read)
        assert patched is not None, what
        kept = patched
        _assert_is_the_report(sessions, version, dataset, kept)


@pytest.mark.parametrize("change", [_grade_lands, _run_added, _panel_deleted])
def test_the_stored_inputs_are_not_used_once_the_judges_moved(
        sessions, db_url, copied_world, monkeypatch, change):
    # one world for the three changes: built once per backend, then copied
    version, dataset = copied_world(("random_world", 43, 24),
                                    lambda s: _random_world(s, 43, responses=24))
    before = _kept(sessions, version, dataset)
    change(sessions, version, dataset)
    made = Calls(monkeypatch, agreement_inputs_store, "make_inputs")

    assert agreement_kept.build(sessions, version.id, dataset.id, before) is None
    other = another_process(db_url)
    try:
        found = agreement_inputs_store.kept_inputs(other, version.id, dataset.id,
                                                   lambda: None)
        if change is _grade_lands:  # not the stored ones: advanced over the grade
            assert found is not None and found.stamp != before.stamp and made.calls == 0
            # (tests/storage/test_inputs_advance.py); stored without an open part, the
            # stored ones are not advanced (below: None, and made whole)
            agreement_inputs_store.store(other, dataclasses.replace(before, open=None))
        else:
            assert found is None  # not the stored ones
        moved = agreement_judge_counts.judge_stamp(
            agreement.data_stamp(other, version.id, dataset.id))
        assert agreement_inputs_store.kept_inputs(
            other, version.id, dataset.id, lambda: None, moved) is None
        # a page still holding the stamp it read before: the inputs stored at that stamp
        # (read back, the stamp not read again), which the build refuses (above)
        held = agreement_inputs_store.kept_inputs(other, version.id, dataset.id,
                                                  lambda: None, before.stamp)
        assert held == before if change is _grade_lands else held is None  # other judges
    finally:
        other.kw["bind"].dispose()
    now = _kept(sessions, version, dataset)

    assert made.calls == 1 and now is not None and now != before
    assert now.stamp != before.stamp
    kept = agreement_kept.build(sessions, version.id, dataset.id, now)
    assert kept is not None
    whole = agreement.agreement_report(sessions, version.id, dataset.id)
    assert kept.report == whole and kept.report.patterns == whole.patterns
    assert _kept(sessions, version, dataset) == now and made.calls == 1  # stored again


def test_the_slot_reads_the_whole_report_when_the_inputs_cannot_keep_it(sessions):
    version, dataset = _random_world(sessions, 44, responses=16)
    inputs = _kept(sessions, version, dataset)
    _grade_lands(sessions, version, dataset)  # the inputs are stale: the report is read whole
    asked = []

    def patterns():
        asked.append(1)
        return agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)

    slot = agreement_kept.KeptSlot()
    report = slot.report(sessions, version.id, dataset.id, inputs, patterns)

    assert asked and slot._kept is None
    assert report == agreement.agreement_report(sessions, version.id, dataset.id)


def test_a_score_column_is_the_dict_it_stands_for():
    scores = {2: 0.5, 5: 1.0, 9: 0.25, 11: 0.0}
    column = ScoreColumn(list(scores), list(scores.values()))

    assert column == scores and scores == column and dict(column) == scores
    assert list(column.items()) == list(scores.items()) and len(column) == 4
    assert column[9] == 0.25 and column.get(3) is None and 3 not in column and 5 in column
    assert column.get("5") is None and True not in column
    with pytest.raises(KeyError):
        column[4]
    assert column.without({5, 7}) == {2: 0.5, 9: 0.25, 11: 0.0}
    assert column.without({7}) is column
    assert column != {2: 0.5, 5: 1.0, 9: 0.25}
    with pytest.raises(ValueError):
        ScoreColumn([3, 2], [0.1, 0.2])


def test_a_sources_scores_are_read_over_its_grades_arrays_when_every_grade_is_scored():
    import numpy as np

    ids, scores = np.array([2, 5, 9], dtype=np.int64), np.array([0.5, 1.0, 0.25])
    every = agreement_inputs.SourceGrades(ids, scores, np.ones(3, dtype=bool))
    some = agreement_inputs.SourceGrades(ids, scores, np.array([True, False, True]))

    column = every.column()
    assert column == {2: 0.5, 5: 1.0, 9: 0.25}
    assert np.shares_memory(column.ids, ids) and np.shares_memory(column.scores, scores)
    assert every.column({5}) == {2: 0.5, 9: 0.25} and some.column() == {2: 0.5, 9: 0.25}
    assert not np.shares_memory(some.column().scores, scores)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_folded_rows_counted_back_are_the_rows_counts(seed):
    rng = random.Random(seed)
    rows = {}
    for rid in range(40):
        for cid in (3, 5):
            codes = (None, *(rng.choice([None, 1, 2, 3]) for _ in range(3)))
            disagree = 1 in codes[:3] and 2 in codes[:3]
            first = next((i for i, c in enumerate(codes[:3]) if c is not None), 0)
            row = (cid, *codes, rid if disagree else None,
                   first * 1_000_000_000 + cid if disagree else None)
            rows[row] = rows.get(row, 0) + 1
    folded = FoldedRows.of(((*r, n) for r, n in rows.items()), 4, (0, 1, 2))
    absent = (3, 1, 2, None, None, 99, 1_000_000_000 + 3)

    assert folded.counts_of([*rows, absent]) == [*rows.values(), 0]
    assert [folded.count_of(row) for row in rows] == list(rows.values())


def test_a_blind_reviewers_report_from_the_one_on_the_inputs_is_the_one_from_every_verdict(
        sessions):
    version, dataset = _random_world(sessions, 45, responses=24)
    kept = agreement_kept.build(sessions, version.id, dataset.id,
                                _kept(sessions, version, dataset))
    assert kept is not None and isinstance(kept.judges, agreement_inputs.JudgeInputs)
    for sight in SIGHTS:
        _assert_seen_as_every_verdict_gives(sessions, version, dataset, kept, sight)
