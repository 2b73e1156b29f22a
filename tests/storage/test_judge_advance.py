"""The judges' stored pattern count advanced over the grades landed since it was counted
(storage.services.agreement_judge_counts.advanced, through agreement_judge_store): only the
responses open when it was counted are counted again, and the rows are the ones a whole count
gives now; anything but grades landing is counted whole. SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from sqlalchemy import update

from grading.types import EvaluationReport, ScoringSettings, Verdict
from storage import models as m
from storage.services import (
    agreement_inputs_store,
    agreement_judge_counts,
    agreement_judge_store,
    agreement_kept,
    datasets,
    panels,
    runs,
)
from storage.services.agreement_sides import patterns_query
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, Calls, another_process, judge_report
from tests.storage.test_agreement_kept import _assert_is_the_report
from tests.storage.test_report_counts import _random_world

M, U, C = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS


def _same_count(a, b) -> None:
    """The same keys, voters, stamp and rows (in any order), and the same open part."""
    assert dataclasses.replace(a, rows=()) == dataclasses.replace(b, rows=())
    assert Counter(a.rows) == Counter(b.rows) and len(a.rows) == len(b.rows)
    assert a.open is not None and b.open is not None
    assert a.open.response_ids() == b.open.response_ids()
    assert Counter(a.open.rows) == Counter(b.open.rows)


def _no_whole_count(monkeypatch) -> None:
    """The seam: a whole count made by the store fails the test."""
    def whole(*_args, **_kwargs):
        raise AssertionError("counted whole, not advanced")

    monkeypatch.setattr(agreement_judge_store, "judge_patterns", whole)


def _ungraded(sessions, run_id: int, dataset_id: int, skip: int = 0):
    graded = {g.response_id for g in runs.list_grades(sessions, run_id)}
    return [r for r in datasets.list_responses(sessions, dataset_id) if r.id not in graded][skip]


def _grade(sessions, run_id, response, verdicts, transient=False):
    report = judge_report(CRITERIA, verdicts, ScoringSettings(), response.output)
    runs.record_grades(sessions, run_id, [runs.NewGrade(response.id, report, 0.1,
                                                        transient=transient)])


def _made(sessions, version, dataset):
    return runs.list_runs(sessions, rubric_version_id=version.id, dataset_id=dataset.id)


def _new_response_graded(sessions, version, dataset):
    run = _made(sessions, version, dataset)[1]
    _grade(sessions, run.id, _ungraded(sessions, run.id, dataset.id), [M, U, U, M])


def _grades_in_two_runs(sessions, version, dataset):
    made = _made(sessions, version, dataset)
    _grade(sessions, made[0].id, _ungraded(sessions, made[0].id, dataset.id), [U, U, M, C])
    _grade(sessions, made[2].id, _ungraded(sessions, made[2].id, dataset.id), [M, M, M, U])


def _one_response_by_every_run(sessions, version, dataset):
    """Every run grades the same response one after the other (a panel member each)."""
    made = _made(sessions, version, dataset)
    graded = [{g.response_id for g in runs.list_grades(sessions, r.id)} for r in made]
    response = next(r for r in datasets.list_responses(sessions, dataset.id)
                    if r.id not in graded[0])
    for run, done, verdicts in zip(made, graded, ([M, U, M, U], [U, U, M, M], [M, C, U, U]),
                                   strict=True):
        if response.id not in done:
            _grade(sessions, run.id, response, verdicts)


def _batch_of_grades(sessions, version, dataset):
    run = _made(sessions, version, dataset)[0]
    spare = [_ungraded(sessions, run.id, dataset.id, i) for i in range(2)]
    runs.record_grades(sessions, run.id, [
        runs.NewGrade(r.id, judge_report(CRITERIA, v, ScoringSettings(), r.output), 0.1)
        for r, v in zip(spare, ([M, M, U, U], [U, M, U, C]), strict=True)])


LANDINGS = [
    pytest.param(_new_response_graded, id="a new response graded"),
    pytest.param(_grades_in_two_runs, id="grades in two runs"),
    pytest.param(_one_response_by_every_run, id="one response by every panel member"),
    pytest.param(_batch_of_grades, id="a batch of grades"),
]


@pytest.mark.parametrize("land", LANDINGS)
def test_grades_landed_advance_the_stored_count_to_the_whole_count(
        sessions, copied_world, db_url, monkeypatch, land):
    version, dataset = copied_world(("random_world", 41, 30),
                                    lambda s: _random_world(s, 41, responses=30))
    agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    land(sessions, version, dataset)
    _no_whole_count(monkeypatch)

    found = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)

    now = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    _same_count(now, found)
    # its rows come back in another order than a whole count's: the report (and the judges'
    # inputs made from the count) built on it is still the whole report, figure for figure
    kept = agreement_kept.build(sessions, version.id, dataset.id, found)
    assert kept is not None
    _assert_is_the_report(sessions, version, dataset, kept)
    inputs = agreement_inputs_store.kept_inputs(sessions, version.id, dataset.id,
                                                lambda: found)
    from_inputs = agreement_kept.build(sessions, version.id, dataset.id, inputs)
    assert from_inputs is not None
    _assert_is_the_report(sessions, version, dataset, from_inputs)
    other = another_process(db_url)  # stored at the new stamp: read back, not counted
    try:
        read = agreement_judge_store.kept_patterns(other, version.id, dataset.id)
    finally:
        other.kw["bind"].dispose()
    assert read == found
    # and advanced again from the advanced one
    _new_response_graded(sessions, version, dataset)
    again = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    _same_count(agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id), again)


def test_a_transient_failure_re_graded_advances_the_count(sessions, monkeypatch):
    """The one grade ever replaced: a transient failure (its verdicts counted, some criteria
    failed) re-graded by a later pass; its old rows go out, the new ones in."""
    version, dataset = _random_world(sessions, 42, responses=24)
    run = _made(sessions, version, dataset)[0]
    spare = _ungraded(sessions, run.id, dataset.id)
    _grade(sessions, run.id, spare, [M, None, U, None], transient=True)
    kept = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    assert spare.id in kept.open.response_ids()
    _grade(sessions, run.id, spare, [U, M, M, M])  # replaces it
    _no_whole_count(monkeypatch)

    found = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)

    now = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    _same_count(now, found)
    assert spare.id not in found.open.response_ids()  # settled now
    assert Counter(found.rows) != Counter(kept.rows)


def test_a_run_still_grading_outside_any_panel_advances_its_count(sessions, monkeypatch):
    """A run being graded (not a panel member: its panels stay settled): each read after
    its grades land counts only its open responses; its status changing moves the stamp
    and nothing else."""
    version, dataset = _random_world(sessions, 43, responses=24)
    late = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                           grader="per_criterion", model="openai/late", actor=ADMIN)
    runs.start_run(sessions, late.id, worker="t")
    _grade(sessions, late.id, _ungraded(sessions, late.id, dataset.id), [M, U, M, U])
    agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)  # counted whole
    _no_whole_count(monkeypatch)
    for i, verdicts in enumerate(([U, U, M, M], [M, M, M, C], [U, M, None, U])):
        _grade(sessions, late.id, _ungraded(sessions, late.id, dataset.id, i), verdicts)
        found = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
        _same_count(agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id),
                    found)
    runs.finish_run(sessions, late.id)
    found = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    _same_count(agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id), found)


def _panel_added(sessions, version, dataset):
    made = _made(sessions, version, dataset)
    panels.create_panel(sessions, run_ids=[made[1].id, made[2].id], rule="unanimous",
                        actor=ADMIN)
    _new_response_graded(sessions, version, dataset)


def _run_added_and_graded(sessions, version, dataset):
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/new", actor=ADMIN)
    _grade(sessions, run.id, datasets.list_responses(sessions, dataset.id)[0], [M, U, M, C])


def _panel_deleted(sessions, version, dataset):
    panels.delete_panel(sessions, panels.list_panels(
        sessions, dataset_id=dataset.id, rubric_version_id=version.id)[0].id, actor=ADMIN)
    _new_response_graded(sessions, version, dataset)


def _stored_without_open_part(sessions, version, dataset):
    """Rows stored before the open part was kept (or with too many open)."""
    with sessions() as session, session.begin():
        session.execute(update(m.JudgePatternSetRow).values(open_ids=None, open_rows=None))
    _new_response_graded(sessions, version, dataset)


@pytest.mark.parametrize("change", [
    pytest.param(_panel_added, id="a panel is added"),
    pytest.param(_run_added_and_graded, id="a run is added"),
    pytest.param(_panel_deleted, id="a panel is deleted"),
    pytest.param(_stored_without_open_part, id="stored without an open part"),
])
def test_anything_but_grades_landing_is_counted_whole(sessions, copied_world, monkeypatch, change):
    version, dataset = copied_world(("random_world", 44, 20),
                                    lambda s: _random_world(s, 44, responses=20))
    agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    change(sessions, version, dataset)
    counts = Calls(monkeypatch, agreement_judge_store, "judge_patterns")

    found = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)

    assert counts.calls == 1
    now = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    _same_count(now, found)


def test_with_more_open_than_kept_for_the_count_is_counted_whole(sessions, monkeypatch):
    monkeypatch.setattr(agreement_judge_counts, "OPEN_MOST", 3)
    version, dataset = _random_world(sessions, 45, responses=20)
    first = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    assert first.open is None
    _new_response_graded(sessions, version, dataset)
    counts = Calls(monkeypatch, agreement_judge_store, "judge_patterns")

    found = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)

    assert counts.calls == 1
    monkeypatch.setattr(agreement_judge_counts, "OPEN_MOST", 20_000)
    now = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    assert Counter(now.rows) == Counter(found.rows) and now.stamp == found.stamp


def test_the_open_part_is_the_count_over_the_open_responses(sessions):
    """What a whole count keeps: the responses some judge has no grade (or a transient
    failure) for, and exactly their rows."""
    version, dataset = _random_world(sessions, 46, responses=20)
    run = _made(sessions, version, dataset)[2]
    spare = _ungraded(sessions, run.id, dataset.id)
    runs.record_grades(sessions, run.id, [runs.NewGrade(
        spare.id, EvaluationReport(score=None, error="HTTP 503"), 0.1, transient=True)])

    counted = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)

    made = _made(sessions, version, dataset)
    settled = [{g.response_id for g in runs.list_grades(sessions, r.id)} - {spare.id}
               for r in made]
    every = [r.id for r in datasets.list_responses(sessions, dataset.id)]
    assert counted.open.response_ids() == [r for r in every
                                           if any(r not in s for s in settled)]
    assert spare.id in counted.open.response_ids()
    assert 0 < len(counted.open.rows) < len(counted.rows)
    _keys, sides, voters = agreement_judge_counts.judge_sides(sessions, version.id,
                                                              dataset.id)
    opened = counted.open.response_ids()
    with sessions() as session:
        alone = session.execute(patterns_query(
            [s.where(s.selected_columns.response_id.in_(opened)) for s in sides], voters,
            first=1)).all()
    assert Counter(counted.open.rows) == Counter(
        ((r[0], None, *r[1:-1]), int(r[-1])) for r in alone)


def _landing_while(monkeypatch, owner, sessions, version, dataset) -> list:
    """``owner.recounted`` lands grades in two runs once it has counted (a grade committed
    while a process advances): the stamp moved under the advance."""
    real, landed = owner.recounted, []

    def recounted(*args, **kwargs):
        found = real(*args, **kwargs)
        if not landed:
            landed.append(1)
            _grades_in_two_runs(sessions, version, dataset)
        return found

    monkeypatch.setattr(owner, "recounted", recounted)
    return landed


def test_a_grade_landing_while_the_count_is_advanced_has_it_counted_whole(
        sessions, monkeypatch):
    # the advance re-checks the judges' stamp after counting: a grade that landed meanwhile
    # makes it refuse, and the store counts the whole (never rows of a stamp not theirs)
    version, dataset = _random_world(sessions, 48, responses=24)
    agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)
    _new_response_graded(sessions, version, dataset)
    landed = _landing_while(monkeypatch, agreement_judge_counts, sessions, version, dataset)
    counts = Calls(monkeypatch, agreement_judge_store, "judge_patterns")

    found = agreement_judge_store.kept_patterns(sessions, version.id, dataset.id)

    assert landed and counts.calls == 1
    now = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    _same_count(now, found)
    monkeypatch.undo()
    _no_whole_count(monkeypatch)  # stored at the stamp it was counted at: read back
    _same_count(now, agreement_judge_store.kept_patterns(sessions, version.id, dataset.id))
