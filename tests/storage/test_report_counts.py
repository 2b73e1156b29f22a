"""The Agreement report from the database's counts (storage.services.agreement_counts
.report_counts: people from ``effective_verdicts``, panels from ``panel_verdicts``, alpha from
one ``GROUP BY``) equals the report computed from every verdict in Python, on random data,
on SQLite and PostgreSQL."""

from __future__ import annotations

import random
from itertools import combinations

import pytest

from grading.bootstrap import percentile_interval
from grading.types import ScoringSettings, Verdict
from storage.services import (
    agreement,
    agreement_counts,
    agreement_lists,
    datasets,
    human_baseline,
    panel_results,
    panels,
    reviews,
    rubrics,
    runs,
)
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, judge_report
from tests.storage.recomputed import recomputed
from tests.storage.report_checks import assert_same_report

M, U, C = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS


def _random_world(sessions, seed: int, *, responses: int = 24,
                  reviewers: tuple[str, ...] = ("ana", "bo", "cy")):
    """Three runs whose verdicts mostly follow a hidden truth (some CANNOT_ASSESS, failed
    criteria, ungraded responses), a majority and an 'any' panel of them, three reviewers on
    part of the responses (disputes, some adjudicated)."""
    rng = random.Random(seed)
    version = rubrics.create_rubric(sessions, f"R{seed}", CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, f"D{seed}", responses=[
        {"id": f"r{i}", "query": f"q{i}", "text": f"answer {i}"} for i in range(responses)],
        actor=ADMIN)
    found = datasets.list_responses(sessions, dataset.id)
    truth = {(r.id, c.id): rng.choice([M, U]) for r in found for c in version.criteria}

    def noisy(value: Verdict, agree: float) -> Verdict | None:
        roll = rng.random()
        if roll < 0.05:
            return C
        if roll < 0.07:
            return None
        return value if rng.random() < agree else (U if value is M else M)

    settings = ScoringSettings()
    made = []
    for i, agree in enumerate((0.9, 0.75, 0.6)):
        run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                              grader="per_criterion", model=f"openai/j{i}", actor=ADMIN)
        made.append(run)
        for response in found:
            if rng.random() < 0.1:
                continue  # not graded by this run
            verdicts = [noisy(truth[response.id, c.id], agree) for c in version.criteria]
            runs.record_grade(sessions, run.id, response.id,
                              judge_report(CRITERIA, verdicts, settings, response.output))
        runs.start_run(sessions, run.id, worker="t")
        runs.finish_run(sessions, run.id)
    panels.create_panel(sessions, run_ids=[r.id for r in made], rule="majority", actor=ADMIN)
    panels.create_panel(sessions, run_ids=[made[0].id, made[2].id], rule="any", actor=ADMIN)
    review_randomly(sessions, rng, version, found, truth, noisy, reviewers)
    return version, dataset


def review_randomly(sessions, rng, version, found, truth, noisy,
                    reviewers: tuple[str, ...] = ("ana", "bo", "cy")) -> None:
    """People on about 60% of the responses: each reviewer answers a criterion now and then
    (``noisy`` of the truth, else CANNOT_ASSESS), one in ten criteria adjudicated to the
    truth: disputes, agreements and adjudications. A reviewer's verdicts on a response are
    saved together, as the Review page saves them (``reviews.save_review``), then the
    adjudications: the same verdicts as one save per criterion, in a fifth of the saves."""
    people = [local_actor(name) for name in reviewers]
    for response in found:
        if rng.random() < 0.4:
            continue
        answered: dict[str, dict] = {person.key: {} for person in people}
        adjudicated = []
        for criterion in version.criteria:
            for person in people:
                if rng.random() < 0.6:
                    answered[person.key][criterion.id] = (
                        noisy(truth[response.id, criterion.id], 0.85) or C, "")
            if rng.random() < 0.1:
                adjudicated.append(criterion.id)
        for person in people:
            if answered[person.key]:
                saved = reviews.save_review(sessions, actor=person, response_id=response.id,
                                            verdicts=answered[person.key])
                assert not saved.stale
        for criterion_id in adjudicated:
            reviews.adjudicate(sessions, actor=ADMIN, response_id=response.id,
                               criterion_id=criterion_id,
                               verdict=truth[response.id, criterion_id])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_counted_report_equals_the_report_from_every_verdict(sessions, seed):
    version, dataset = _random_world(sessions, seed)
    data = agreement.gather_sources(sessions, version.id, dataset.id)

    counted = agreement_counts.report_counts(sessions, data)
    report = agreement.agreement_report(sessions, version.id, dataset.id)

    # Every pair, panels included, and alpha came from the counts ...
    keys = [s.key for s in data.verdict_sources]
    assert len(keys) == 6 and sum(k.startswith("panel:") for k in keys) == 2
    assert len(counted.pairwise) == len(keys) * (len(keys) - 1) // 2
    assert counted.alpha is not None
    assert counted.alpha.overall.pairable_units > 0
    # ... and every figure is the one computed from every verdict.
    python = agreement.build_report(data)
    assert_same_report(report, python)
    assert counted.pairwise == python.pairwise
    assert counted.alpha == python.alpha
    assert human_baseline.report_baseline(report) == human_baseline.build_baseline(data)


def test_a_panel_with_a_member_still_grading_is_computed_from_the_data(sessions):
    version, dataset = _random_world(sessions, 4, responses=12)
    panel = unsettled_panel(sessions, version, dataset)
    data = agreement.gather_sources(sessions, version.id, dataset.id)

    counted = agreement_counts.report_counts(sessions, data)

    assert not any(f"panel:{panel.id}" in pair for pair in counted.pairwise)
    assert agreement.agreement_report(sessions, version.id, dataset.id) == (
        agreement.build_report(data))


def unsettled_panel(sessions, version, dataset):
    """A unanimous panel of a finished run and one still grading (one response graded): its
    stored decisions are not all the ones read."""
    member = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                             grader="per_criterion", model="openai/late", actor=ADMIN)
    first = datasets.list_responses(sessions, dataset.id)[0]
    runs.record_grade(sessions, member.id, first.id, judge_report(
        CRITERIA, [M, U, M, U], ScoringSettings(), first.output))
    runs.start_run(sessions, member.id, worker="t")  # still grading: its panel is unsettled
    other = next(r for r in runs.list_runs(sessions, rubric_version_id=version.id,
                                           dataset_id=dataset.id) if r.id != member.id)
    return panels.create_panel(sessions, run_ids=[other.id, member.id], rule="unanimous",
                               actor=ADMIN)


@pytest.mark.parametrize("seed", [5, 6])
def test_panel_sources_read_as_columns_equal_the_panel_grades(sessions, seed):
    version, dataset = _random_world(sessions, seed, responses=16)
    late = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                           grader="per_criterion", model="openai/late", actor=ADMIN)
    first = datasets.list_responses(sessions, dataset.id)[0]
    runs.record_grade(sessions, late.id, first.id, judge_report(
        CRITERIA, [M, None, C, U], ScoringSettings(), first.output))
    runs.start_run(sessions, late.id, worker="t")  # still grading: recomputed when read
    run_ids = [r.id for r in runs.list_runs(sessions, rubric_version_id=version.id,
                                            dataset_id=dataset.id)]
    panels.create_panel(sessions, run_ids=run_ids, rule="weighted", actor=ADMIN,
                        weights=[1.0, 2.0, 1.0, 3.0])

    read = panel_results.panel_sources(sessions, version.id, dataset.id)

    assert len(read) == 3
    assert read == panel_results.recomputed_sources(sessions, version.id, dataset.id)
    with recomputed():  # panels from every PanelGrade, reviewers through consensus.gather
        before = agreement.gather_sources(sessions, version.id, dataset.id)
    now = agreement.gather_sources(sessions, version.id, dataset.id)
    assert now == before
    assert now.reviewer_verdicts and now.verdicts[f"panel:{read[-1].panel.id}"]
    assert human_baseline.build_baseline(now) == human_baseline.build_baseline(before)


def _one_resample_at_a_time(boot, per_left):
    """The judge's leave-one-out interval as it was computed before the arrays."""
    if boot.weights is None or not per_left:
        return None
    sums = [boot.sums(cells) for cells in per_left]
    values = []
    for r in range(human_baseline.RESAMPLES):
        defined = [v for v in (human_baseline._f1(*rows[r]) for rows in sums) if v is not None]
        values.append(sum(defined) / len(defined) if defined else None)
    return percentile_interval(values, resamples=human_baseline.RESAMPLES)


@pytest.mark.parametrize("reviewers", [("ana", "bo"), ("ana", "bo", "cy")])
def test_the_baseline_intervals_on_arrays_equal_one_resample_at_a_time(
        sessions, monkeypatch, reviewers):
    version, dataset = _random_world(sessions, 8, responses=30, reviewers=reviewers)
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    on_arrays = human_baseline.build_baseline(data)

    monkeypatch.setattr(human_baseline, "_ON_ARRAYS", {})
    monkeypatch.setattr(human_baseline, "_mean_f1_interval", _one_resample_at_a_time)

    assert human_baseline.build_baseline(data) == on_arrays
    row = on_arrays.criteria[0]
    assert row.percent.interval is not None and row.judges[0].loo_f1.interval is not None
    assert row.judges[0].vs_human_kappa_interval is not None
    assert on_arrays.reviewers[0].vs_final_percent_interval is not None


def test_the_pattern_count_reads_every_verdict_table_through_an_index(sessions):
    from tests.storage.test_agreement_counts import _full_scans, _plan

    version, dataset = _random_world(sessions, 9, responses=8)
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    runs_ = [s.run_id for s in data.verdict_sources if s.run_id is not None]
    panel = next(s for s in data.verdict_sources if s.is_panel)
    sides = [agreement_counts.people_side(version.id, dataset.id),
             *[agreement_counts.run_side(run_id) for run_id in runs_],
             agreement_counts.panel_side(panel.panel_id, panel.member_run_ids)]

    plan = _plan(sessions, agreement_counts.patterns_query(sides, [0, 1, 2, 3]))

    for table in ("grade_criteria", "grades", "panel_verdicts", "effective_verdicts"):
        assert table in plan, plan
        assert not _full_scans(plan, table), plan


@pytest.mark.parametrize("seed", [11, 12])
def test_a_counted_report_lists_and_counts_the_disagreements_every_verdict_gives(
        sessions, seed):
    # The counted report holds the judges' verdicts of the reviewed responses only: its
    # disagreement lists are read from the database, its per-criterion counts come from the
    # verdict patterns; both as the report made from every verdict gives them.
    version, dataset = _random_world(sessions, seed, responses=30)
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    python = agreement.build_report(agreement.gather_sources(sessions, version.id,
                                                             dataset.id))
    assert not report.data.complete and report.patterns is not None
    keys = [s.key for s in python.data.verdict_sources]
    chosen = [keys, *[list(pair) for pair in combinations(keys, 2)]]
    listed = 0
    for criterion in version.criteria:
        for these in chosen:
            expected = agreement.disagreements(python.data, these, criterion.id)
            assert agreement_lists.disagreement_list(
                sessions, report, these, criterion.id) == expected
            listed += len(expected)
    assert listed > 0
    for a, b in [(None, None), *combinations(keys, 2)]:
        assert agreement.criterion_table(report, a, b) == agreement.criterion_table(
            python, a, b)


def _one_run_world(sessions, *, reviewed: bool):
    version = rubrics.create_rubric(sessions, "One", CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, "One", responses=[
        {"id": f"r{i}", "query": "q", "text": f"answer {i}"} for i in range(6)], actor=ADMIN)
    found = datasets.list_responses(sessions, dataset.id)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/one", actor=ADMIN)
    for i, response in enumerate(found):
        runs.record_grade(sessions, run.id, response.id, judge_report(
            CRITERIA, [M if (i + j) % 3 else U for j in range(len(CRITERIA))],
            ScoringSettings(), response.output))
    if reviewed:
        for response in found[:3]:
            for criterion in version.criteria:
                reviews.set_human_verdict(sessions, actor=local_actor("ana"),
                                          response_id=response.id,
                                          criterion_id=criterion.id, verdict=M)
    return version, dataset


@pytest.mark.parametrize("reviewed", [False, True])
def test_one_run_alone_or_with_people_is_counted_as_every_verdict_gives_it(
        sessions, reviewed):
    # alpha with one voter (a note, no value) and a judge with nobody beside it: the
    # counted report says what the one from every verdict says
    version, dataset = _one_run_world(sessions, reviewed=reviewed)

    report = agreement.agreement_report(sessions, version.id, dataset.id)

    data = agreement.gather_sources(sessions, version.id, dataset.id)
    assert_same_report(report, agreement.build_report(data))
    assert report.alpha.overall.units > 0
    baseline = human_baseline.report_baseline(report)
    assert baseline == human_baseline.build_baseline(data)
    assert baseline.criteria[0].judges[0].vs_human.only_in_b > 0


def test_people_whose_every_answer_is_disputed_get_the_report_from_every_verdict(sessions):
    # Reviewers answered but no verdict is in force: no Human pair to take a judge's
    # agreement with people from, so the judges' verdicts are all read.
    version, dataset = _one_run_world(sessions, reviewed=False)
    first = datasets.list_responses(sessions, dataset.id)[0]
    for name, verdict in (("ana", M), ("bo", U)):
        reviews.set_human_verdict(sessions, actor=local_actor(name), response_id=first.id,
                                  criterion_id=version.criteria[0].id, verdict=verdict)

    report = agreement.agreement_report(sessions, version.id, dataset.id)

    data = agreement.gather_sources(sessions, version.id, dataset.id)
    assert report.data.complete and report == agreement.build_report(data)
    assert human_baseline.report_baseline(report) == human_baseline.build_baseline(data)


def test_a_verdict_saved_while_the_report_counts_gives_the_report_from_every_verdict(
        sessions, monkeypatch):
    version, dataset = _random_world(sessions, 13, responses=12)
    counting = agreement_counts.report_counts
    first = datasets.list_responses(sessions, dataset.id)[0]
    saved = []

    def a_verdict_lands_first(sessions_, data, judges=None):  # a reviewer saves mid-read
        if not saved:
            saved.append(reviews.set_human_verdict(
                sessions, actor=local_actor("dee"), response_id=first.id,
                criterion_id=version.criteria[0].id, verdict=U))
        return counting(sessions_, data, judges)

    monkeypatch.setattr(agreement_counts, "report_counts", a_verdict_lands_first)
    report = agreement.agreement_report(sessions, version.id, dataset.id)

    assert saved and report.data.complete
    assert report == agreement.build_report(agreement.gather_sources(sessions, version.id,
                                                                     dataset.id))


def test_a_counted_report_refuses_what_needs_every_judge_verdict(sessions):
    version, dataset = _random_world(sessions, 14, responses=10)
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    keys = [s.key for s in report.data.verdict_sources]

    with pytest.raises(ValueError, match="reviewed responses only"):
        agreement.disagreements(report.data, keys)
    with pytest.raises(ValueError, match="reviewed responses only"):
        agreement.build_report(report.data)
    with pytest.raises(ValueError, match="reviewed responses only"):
        human_baseline.build_baseline(report.data)
    assert agreement_lists.complete_data(sessions, report.data) == (
        agreement.gather_sources(sessions, version.id, dataset.id))


@pytest.mark.parametrize("seed", [4, 5])
def test_the_agreement_command_prints_from_the_counts_what_every_verdict_gives(sessions, seed):
    """``rubric-workbench agreement`` reads the counted report (at 100,000 responses every
    judge verdict is millions of rows): its JSON, trust included, is the one built from every
    verdict."""
    from storage.agreement_command import agreement_json

    version, dataset = _random_world(sessions, seed)

    counted, data, _trust = agreement_json(sessions, version.id, dataset.id)
    everything, whole, _ = agreement_json(sessions, version.id, dataset.id, every_verdict=True)

    assert not data.complete and whole.complete  # the counted path was taken
    assert counted["criteria"] and counted["trust"]["judges"]
    assert counted == everything
