"""The judges' stored inputs advanced over the grades landed since they were made
(storage.services.agreement_inputs.advanced, through agreement_inputs_store.kept_inputs):
a new process after grades land patches the stored folded count and the sources' grades of
the responses open when they were made, and gets exactly the inputs ``make_inputs`` makes
now from a whole count; the report built on them is the whole report; anything but grades
landing makes them whole. SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from sqlalchemy import select

from storage import models as m
from storage.services import (
    agreement,
    agreement_inputs,
    agreement_inputs_store,
    agreement_judge_counts,
    agreement_judge_store,
    agreement_kept,
    agreement_people_store,
    agreement_sources,
    datasets,
    runs,
)
from tests.actors import ADMIN
from tests.storage.helpers import Calls, another_process
from tests.storage.test_agreement_judge_store import _panel_deleted, _run_added
from tests.storage.test_agreement_kept import _assert_is_the_report, _writes
from tests.storage.test_agreement_people import _assert_stored_now, _refused
from tests.storage.test_judge_advance import (
    LANDINGS,
    M,
    U,
    _grade,
    _made,
    _new_response_graded,
    _ungraded,
)
from tests.storage.test_report_counts import _random_world


def _kept(sessions, version, dataset, patterns=None):
    return agreement_inputs_store.kept_inputs(
        sessions, version.id, dataset.id,
        patterns or (lambda: agreement_judge_counts.judge_patterns(sessions, version.id,
                                                                   dataset.id)))


def _made_now(sessions, version, dataset):
    """The inputs made now from a whole count (what the full path makes)."""
    judges = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    return agreement_inputs.make_inputs(sessions, judges), judges


def _assert_same_inputs(found, now, judges) -> None:
    assert found is not None and now is not None
    assert found == now  # keys, voters, stamp, sources, the folded count, every grade
    assert found.folded == now.folded and list(found.grades) == list(now.grades)
    for key, grades in now.grades.items():
        assert found.grades[key] == grades, key
        assert (found.grades[key].cost, found.grades[key].unknown_cost_count) == (
            grades.cost, grades.unknown_cost_count)
    # the open part carried on is the whole count's
    assert found.open is not None and judges.open is not None
    assert found.open.response_ids() == judges.open.response_ids()
    assert Counter(found.open.rows) == Counter(judges.open.rows)


def _not_made(monkeypatch) -> None:
    """The seam: making the inputs whole (or asking for the judges' count) fails."""
    def whole(*_args, **_kwargs):
        raise AssertionError("made whole, not advanced")

    monkeypatch.setattr(agreement_inputs_store, "make_inputs", whole)


def _raising():
    raise AssertionError("the judges' count asked for")


@pytest.mark.parametrize("land", LANDINGS)
def test_grades_landed_advance_the_stored_inputs_to_the_ones_made_now(
        sessions, copied_world, db_url, monkeypatch, land):
    version, dataset = copied_world(("random_world", 41, 30),
                                    lambda s: _random_world(s, 41, responses=30))
    _kept(sessions, version, dataset)
    land(sessions, version, dataset)
    _not_made(monkeypatch)

    other = another_process(db_url)  # a new process: the stored inputs only
    try:
        found = _kept(other, version, dataset, _raising)
        read = _kept(other, version, dataset, _raising)  # stored at the new stamp
    finally:
        other.kw["bind"].dispose()

    now, judges = _made_now(sessions, version, dataset)
    _assert_same_inputs(found, now, judges)
    assert read == found and read.open.response_ids() == found.open.response_ids()
    built = agreement_kept.build(sessions, version.id, dataset.id, found)
    assert built is not None
    whole = agreement.agreement_report(sessions, version.id, dataset.id)
    assert built.report == whole and built.report.patterns == whole.patterns
    # and advanced again from the advanced ones
    _new_response_graded(sessions, version, dataset)
    again = _kept(sessions, version, dataset, _raising)
    _assert_same_inputs(again, *_made_now(sessions, version, dataset))


def test_a_transient_failure_re_graded_advances_the_inputs(sessions, monkeypatch):
    """The one grade ever replaced: its score (none, a failure) and its panels' decisions
    and costs on that response move; every other grade stays."""
    version, dataset = _random_world(sessions, 42, responses=24)
    run = _made(sessions, version, dataset)[0]
    spare = _ungraded(sessions, run.id, dataset.id)
    _grade(sessions, run.id, spare, [M, None, U, None], transient=True)
    before = _kept(sessions, version, dataset)
    assert spare.id in before.open.response_ids()
    _grade(sessions, run.id, spare, [U, M, M, M])  # replaces it
    _not_made(monkeypatch)

    found = _kept(sessions, version, dataset, _raising)

    _assert_same_inputs(found, *_made_now(sessions, version, dataset))
    assert spare.id not in found.open.response_ids()
    assert found.grades != before.grades


def test_a_run_still_grading_advances_its_inputs(sessions, monkeypatch):
    """A run being graded: each read after its grades land advances; its status changing
    (finished) moves the stamp and nothing else."""
    version, dataset = _random_world(sessions, 43, responses=24)
    late = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                           grader="per_criterion", model="openai/late", actor=ADMIN)
    runs.start_run(sessions, late.id, worker="t")
    _grade(sessions, late.id, _ungraded(sessions, late.id, dataset.id), [M, U, M, U])
    _kept(sessions, version, dataset)  # made whole
    _not_made(monkeypatch)
    for i, verdicts in enumerate(([U, U, M, M], [M, M, M, None])):
        _grade(sessions, late.id, _ungraded(sessions, late.id, dataset.id, i), verdicts)
        found = _kept(sessions, version, dataset, _raising)
        _assert_same_inputs(found, *_made_now(sessions, version, dataset))
    runs.finish_run(sessions, late.id)
    found = _kept(sessions, version, dataset, _raising)
    _assert_same_inputs(found, *_made_now(sessions, version, dataset))


def _stored_without_open_part(sessions, version, dataset):
    """Inputs stored made from a count without an open part (too many open)."""
    stored = _kept(sessions, version, dataset)
    agreement_inputs_store.store(sessions, dataclasses.replace(stored, open=None))
    _new_response_graded(sessions, version, dataset)


def _rubric_as_judge_run(sessions, version, dataset):
    """A source no judge's count reads (a rubric-as-judge run): its open responses are not
    the count's, so grades landing on it are not followed."""
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="rubric_as_judge", model="openai/whole", actor=ADMIN)
    runs.start_run(sessions, run.id, worker="t")
    _kept(sessions, version, dataset)
    _grade(sessions, run.id, _ungraded(sessions, run.id, dataset.id), [M, U, M, U])


@pytest.mark.parametrize("change", [
    pytest.param(_run_added, id="a run is added"),
    pytest.param(_panel_deleted, id="a panel is deleted"),
    pytest.param(_stored_without_open_part, id="stored without an open part"),
    pytest.param(_rubric_as_judge_run, id="a grade on a rubric-as-judge run"),
])
def test_anything_but_grades_landing_makes_the_inputs_whole(
        sessions, copied_world, monkeypatch, change):
    version, dataset = copied_world(("random_world", 44, 20),
                                    lambda s: _random_world(s, 44, responses=20))
    _kept(sessions, version, dataset)
    change(sessions, version, dataset)
    made = Calls(monkeypatch, agreement_inputs_store, "make_inputs")
    advanced = Calls(monkeypatch, agreement_inputs_store, "advanced")

    found = _kept(sessions, version, dataset)

    assert made.calls == 1
    now, _judges = _made_now(sessions, version, dataset)
    assert found == now
    assert advanced.calls <= 1  # asked, and refused (or no stored inputs for these judges)


def test_inputs_made_from_the_stored_count_read_back_advance(sessions, db_url, monkeypatch):
    """The page's way: the judges' count stored by one process, read back by another
    (agreement_judge_store.read_stored, with its open part) and the inputs made from it;
    a grade lands and the next process advances them."""
    version, dataset = _random_world(sessions, 45, responses=24)
    agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    other = another_process(db_url)
    try:
        made = _kept(other, version, dataset,
                     lambda: agreement_judge_store.kept_patterns(other, version.id,
                                                                 dataset.id))
    finally:
        other.kw["bind"].dispose()
    assert made is not None and made.open is not None
    _new_response_graded(sessions, version, dataset)
    _not_made(monkeypatch)

    found = _kept(sessions, version, dataset, _raising)

    _assert_same_inputs(found, *_made_now(sessions, version, dataset))


# -- people's rows follow the grades the inputs advanced over ---------------------------------


def _reviewed(sessions, version) -> set[int]:
    with sessions() as session:
        return set(session.scalars(select(m.EffectiveVerdictRow.response_id).where(
            m.EffectiveVerdictRow.rubric_version_id == version.id)))


def _reviewed_response_graded(sessions, version, dataset, verdicts=(U, M, U, M),
                              transient=False):
    """A grade on a reviewed response a run had not graded: that run's verdicts and
    reasons there are people's rows."""
    reviewed = _reviewed(sessions, version)
    for run in _made(sessions, version, dataset):
        graded = {g.response_id for g in runs.list_grades(sessions, run.id)}
        spare = [r for r in datasets.list_responses(sessions, dataset.id)
                 if r.id in reviewed and r.id not in graded]
        if spare:
            _grade(sessions, run.id, spare[0], list(verdicts), transient=transient)
            return
    raise AssertionError("no reviewed response left ungraded")


def _reviewed_failure_re_graded(sessions, version, dataset):
    """A transient failure on a reviewed response (stored before the rows were kept:
    ``_failed_first``) re-graded."""
    with sessions() as session:
        run_id, rid = session.execute(select(m.GradeRow.run_id, m.GradeRow.response_id)
                                      .where(m.GradeRow.transient.is_(True))).one()
    response = next(r for r in datasets.list_responses(sessions, dataset.id) if r.id == rid)
    _grade(sessions, run_id, response, [M, M, U, U])


def _grade_and_verdict(sessions, version, dataset):
    _reviewed_response_graded(sessions, version, dataset)
    _what, write = next(iter(_writes(sessions, version, dataset, 46)))
    write()


@pytest.mark.parametrize("land", [
    pytest.param(_reviewed_response_graded, id="a reviewed response graded"),
    pytest.param(_reviewed_failure_re_graded, id="a reviewed response's failure re-graded"),
    pytest.param(_new_response_graded, id="a new response graded"),
    pytest.param(_grade_and_verdict, id="a grade and a verdict"),
])
def test_people_rows_advance_over_the_grades_the_inputs_advanced_over(
        sessions, copied_world, db_url, monkeypatch, land):
    version, dataset = copied_world(("random_world", 46, 30),
                                    lambda s: _random_world(s, 46, responses=30))
    if land is _reviewed_failure_re_graded:
        _reviewed_response_graded(sessions, version, dataset, (U, None, M, None), True)
    assert agreement_kept.build(sessions, version.id, dataset.id,
                                _kept(sessions, version, dataset)) is not None
    land(sessions, version, dataset)
    touched = Calls(monkeypatch, agreement_people_store, "read_touched")
    _not_made(monkeypatch)

    other = another_process(db_url)
    try:
        with _refused(monkeypatch, agreement_sources, "read_rows"):
            inputs = _kept(other, version, dataset, _raising)
            built = agreement_kept.build(other, version.id, dataset.id, inputs)
        assert built is not None and touched.calls == 1  # advanced, not read whole
        _assert_stored_now(other, monkeypatch, version, dataset)
        _assert_is_the_report(other, version, dataset, built)
    finally:
        other.kw["bind"].dispose()


def test_people_rows_are_read_whole_after_grades_the_inputs_did_not_follow(
        sessions, db_url, monkeypatch):
    """The inputs advanced and stored by one process (no build), read back by the next at
    their stamp: nothing says which grades landed, so people's rows are read whole."""
    version, dataset = _random_world(sessions, 47, responses=24)
    assert agreement_kept.build(sessions, version.id, dataset.id,
                                _kept(sessions, version, dataset)) is not None
    _reviewed_response_graded(sessions, version, dataset)
    assert _kept(sessions, version, dataset, _raising).since is not None  # advanced, stored
    reads = Calls(monkeypatch, agreement_sources, "read_rows")

    other = another_process(db_url)
    try:
        inputs = _kept(other, version, dataset, _raising)
        assert inputs.since is None
        built = agreement_kept.build(other, version.id, dataset.id, inputs)
        assert built is not None and reads.calls == 1
        _assert_stored_now(other, monkeypatch, version, dataset)
        _assert_is_the_report(other, version, dataset, built)
    finally:
        other.kw["bind"].dispose()


def test_a_grade_landing_while_the_inputs_are_advanced_gives_none_of_a_stamp_not_theirs(
        sessions, monkeypatch):
    # the advance re-checks the judges' stamp after reading: grades landed meanwhile make
    # it refuse; the judges moved since this read's stamp, so it gives none (the page then
    # reads the report whole: KeptSlot.report) and stores nothing; the next read advances
    # the stored ones over every grade (those that landed were on open responses)
    from tests.storage.test_judge_advance import _landing_while

    version, dataset = _random_world(sessions, 49, responses=24)
    _kept(sessions, version, dataset)
    _new_response_graded(sessions, version, dataset)
    landed = _landing_while(monkeypatch, agreement_inputs, sessions, version, dataset)
    made = Calls(monkeypatch, agreement_inputs_store, "make_inputs")

    assert _kept(sessions, version, dataset) is None
    assert landed and made.calls == 0
    found = _kept(sessions, version, dataset)

    assert made.calls == 0
    _assert_same_inputs(found, *_made_now(sessions, version, dataset))
