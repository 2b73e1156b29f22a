"""The judges' share of the Agreement count kept between verdicts
(storage.services.agreement_judge_counts): after people save, adjudicate and review new
responses, the report made with the kept share is the report counted whole and the report
from every verdict; a grade that lands makes the kept share unused. SQLite and PostgreSQL."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from grading.types import EvaluationReport, ScoringSettings, Verdict
from storage.services import (
    agreement,
    agreement_counts,
    agreement_judge_counts,
    agreement_sides,
    datasets,
    human_baseline,
    panels,
    reviews,
    runs,
)
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, judge_report
from tests.storage.report_checks import assert_same_report
from tests.storage.test_report_counts import _random_world, unsettled_panel

M, U, C = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS


class _Combined:
    """Counts the calls of the real ``combined_rows`` (wrapped, not replaced)."""

    def __init__(self, monkeypatch):
        self.calls = 0
        real = agreement_judge_counts.combined_rows

        def wrapped(*args, **kwargs):
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(agreement_judge_counts, "combined_rows", wrapped)


def _people_work(sessions, version, dataset, seed: int) -> None:
    """New verdicts on reviewed and on not yet reviewed responses, changed ones, an
    adjudication: only people's column moves."""
    rng = random.Random(seed)
    found = datasets.list_responses(sessions, dataset.id)
    for response in rng.sample(found, 6):
        for criterion in version.criteria:
            if rng.random() < 0.7:
                reviews.set_human_verdict(
                    sessions, actor=local_actor(rng.choice(["ana", "bo", "dee"])),
                    response_id=response.id, criterion_id=criterion.id,
                    verdict=rng.choice([M, U, U, C]))
        if rng.random() < 0.5:
            reviews.adjudicate(sessions, actor=ADMIN, response_id=response.id,
                               criterion_id=version.criteria[0].id, verdict=M)


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_the_report_with_the_kept_judges_count_is_the_whole_count_after_people_work(
        sessions, monkeypatch, seed):
    version, dataset = _random_world(sessions, seed, responses=30)
    kept = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    assert kept is not None and len(kept.keys) == 5  # 3 runs, 2 panels
    _people_work(sessions, version, dataset, seed)
    combined = _Combined(monkeypatch)

    report = agreement.agreement_report(sessions, version.id, dataset.id, judges=kept)

    assert combined.calls == 1
    whole = agreement.agreement_report(sessions, version.id, dataset.id)
    assert combined.calls == 1  # the whole count without the kept share
    assert report == whole and report.data == whole.data
    assert report.patterns == whole.patterns
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    assert_same_report(report, agreement.build_report(data))
    assert human_baseline.report_baseline(report) == human_baseline.build_baseline(data)


@pytest.mark.parametrize("seed", [24, 25])
def test_the_combined_rows_are_the_rows_of_the_whole_count(sessions, seed):
    version, dataset = _random_world(sessions, seed, responses=24)
    kept = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    _people_work(sessions, version, dataset, seed)
    data = agreement.gather_sources(sessions, version.id, dataset.id, complete=False)
    keys = [s.key for s in data.verdict_sources]
    sides = [agreement_sides.side_of(data, key) for key in keys]
    voters = [i for i, key in enumerate(keys) if not data.source(key).is_panel]

    rows = agreement_judge_counts.combined_rows(sessions, kept, sides, voters)

    with sessions() as session:
        whole = session.execute(agreement_sides.patterns_query(sides, voters)).all()
    assert Counter(rows) == Counter(tuple(row) for row in whole)
    assert any(row[-3] is not None for row in rows)  # units where the voters disagree


def test_a_grade_that_lands_leaves_the_kept_judges_count_unused(sessions, monkeypatch):
    version, dataset = _random_world(sessions, 26, responses=16)
    kept = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/new", actor=ADMIN)
    for response in datasets.list_responses(sessions, dataset.id)[:5]:
        runs.record_grade(sessions, run.id, response.id, judge_report(
            CRITERIA, [M, U, M, C], ScoringSettings(), response.output))
    combined = _Combined(monkeypatch)

    report = agreement.agreement_report(sessions, version.id, dataset.id, judges=kept)

    assert combined.calls == 0
    assert f"run:{run.id}" in [s.key for s in report.data.verdict_sources]
    assert report == agreement.agreement_report(sessions, version.id, dataset.id)


def test_the_judges_count_is_not_kept_while_a_panel_is_unsettled(sessions):
    version, dataset = _random_world(sessions, 27, responses=10)
    unsettled_panel(sessions, version, dataset)

    assert agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id) is None
    assert not agreement_counts.countable(sessions, version.id, dataset.id)


@pytest.mark.parametrize("change", ["transient failure replaced", "panel deleted"])
def test_a_judges_change_that_keeps_the_graded_count_leaves_the_kept_count_unused(
        sessions, copied_world, monkeypatch, change):
    """What moves the judges without a new graded response: a transiently failed grade
    replaced by its grade (done and failed counts both move, their sum does not), a panel
    deleted."""
    # one world for both changes: built once per backend, then copied
    version, dataset = copied_world(("random_world", 28, 16),
                                    lambda s: _random_world(s, 28, responses=16))
    made = runs.list_runs(sessions, rubric_version_id=version.id, dataset_id=dataset.id)
    found = datasets.list_responses(sessions, dataset.id)
    run = made[0]
    graded = {g.response_id for g in runs.list_grades(sessions, run.id)}
    spare = next(r for r in found if r.id not in graded)
    if change == "transient failure replaced":
        runs.record_grades(sessions, run.id, [runs.NewGrade(
            spare.id, EvaluationReport(score=None, error="HTTP 503"), 0.1, transient=True)])
    kept = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    assert kept is not None
    if change == "transient failure replaced":
        runs.record_grade(sessions, run.id, spare.id, judge_report(
            CRITERIA, [M, M, U, U], ScoringSettings(), spare.output))
    else:
        panels.delete_panel(sessions, panels.list_panels(
            sessions, dataset_id=dataset.id, rubric_version_id=version.id)[0].id, actor=ADMIN)
    combined = _Combined(monkeypatch)

    report = agreement.agreement_report(sessions, version.id, dataset.id, judges=kept)

    assert combined.calls == 0
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    assert_same_report(report, agreement.build_report(data))
