"""A counted report's disagreement list from the judges' share kept by their stamp
(storage.services.agreement_listing) equals the list the full gather gives and the one every
verdict gives, on SQLite and PostgreSQL; what a person writes leaves the kept share right,
and what changes a judge's verdicts moves the judges' stamp (the kept share is stale then)."""

from __future__ import annotations

from itertools import combinations

import pytest

from grading.types import ScoringSettings, Verdict
from storage.services import (
    agreement,
    agreement_judge_counts,
    agreement_lists,
    agreement_sources,
    datasets,
    panels,
    reviews,
    runs,
)
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, judge_report
from tests.storage.test_report_counts import _random_world, unsettled_panel

M, U = Verdict.MET, Verdict.UNMET


def _every_verdict(sessions, version, dataset):
    return agreement.build_report(agreement.gather_sources(sessions, version.id, dataset.id))


def _chosen(keys):
    return [keys, keys[1:], *[list(pair) for pair in combinations(keys, 2)], keys[:1]]


def _judge_stamp(sessions, version, dataset):
    return agreement_judge_counts.judge_stamp(
        agreement_sources.data_stamp(sessions, version.id, dataset.id))


@pytest.mark.parametrize("seed", [21, 22])
def test_the_list_from_the_judges_share_is_the_gathered_one_and_every_verdicts(
        sessions, copied_world, seed):
    # seed 21's world is the next test's too: built once per backend, then copied
    version, dataset = copied_world(("random_world", seed, 30),
                                    lambda s: _random_world(s, seed, responses=30))
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    python = _every_verdict(sessions, version, dataset)
    assert not report.data.complete
    keys = [s.key for s in python.data.verdict_sources]
    listed = 0
    for criterion in version.criteria:
        for these in _chosen(keys):
            share = agreement_lists.judge_listing(sessions, report.data, these, criterion.id)
            assert share is not None  # the new path, not the gather
            expected = agreement.disagreements(python.data, these, criterion.id)
            assert agreement_lists.disagreement_list(
                sessions, report, these, criterion.id, share) == expected
            assert agreement_lists.gathered_list(
                sessions, report, these, criterion.id) == expected
            listed += len(expected)
    assert listed > 0


@pytest.mark.parametrize("seed", [21, 24])
def test_the_first_items_of_the_list_are_the_whole_lists_first(sessions, copied_world, seed):
    # The page lists a criterion's first disagreements only; the judges' share is then read
    # for the first responses the judges disagree on, looked for among the dataset's first
    # responses (4 x as many each time): the items must be the whole list's first ones, with
    # people among the sources or not, whether found at once, after widening or not at all.
    version, dataset = copied_world(("random_world", seed, 30),
                                    lambda s: _random_world(s, seed, responses=30))
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    python = _every_verdict(sessions, version, dataset)
    keys = [s.key for s in python.data.verdict_sources]
    shorter = 0
    for criterion in version.criteria:
        for these in _chosen(keys):
            expected = agreement.disagreements(python.data, these, criterion.id)
            for first in (1, 2, 3, 7, 50):
                share = agreement_lists.judge_listing(sessions, report.data, these,
                                                      criterion.id, first)
                assert share is not None
                assert len(share.response_ids) <= first
                assert agreement_lists.disagreement_list(
                    sessions, report, these, criterion.id, share, first=first
                ) == expected[:first]
                assert agreement_lists.disagreement_list(
                    sessions, report, these, criterion.id, first=first) == expected[:first]
                shorter += len(expected) > first
    assert shorter > 0  # some lists were cut


def test_a_kept_share_stays_right_after_verdicts_and_an_adjudication(sessions):
    version, dataset = _random_world(sessions, 23, responses=30)
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    keys = [s.key for s in report.data.verdict_sources]
    kept = {(tuple(these), c.id): agreement_lists.judge_listing(
        sessions, report.data, these, c.id)
        for these in _chosen(keys) for c in version.criteria}
    stamp = _judge_stamp(sessions, version, dataset)
    before = {key: agreement_lists.disagreement_list(sessions, report, list(key[0]), key[1],
                                                     share) for key, share in kept.items()}
    # People write: new verdicts on responses nobody reviewed, against the first run, a
    # changed verdict and an adjudication on reviewed ones.
    first = report.data.verdicts[keys[1]]
    unreviewed = [rid for rid in report.data.response_labels
                  if not any(r == rid for r, _ in report.data.verdicts["human"])]
    ana = local_actor("ana")
    for rid in unreviewed[:3]:
        for criterion in version.criteria:
            judged = first.get((rid, criterion.id))
            if judged in (M, U):
                reviews.set_human_verdict(sessions, actor=ana, response_id=rid,
                                          criterion_id=criterion.id,
                                          verdict=U if judged is M else M)
    (rid, cid), value = next(iter(report.data.verdicts["human"].items()))
    reviews.adjudicate(sessions, actor=ADMIN, response_id=rid, criterion_id=cid,
                       verdict=U if value is M else M)
    assert _judge_stamp(sessions, version, dataset) == stamp

    now = agreement.agreement_report(sessions, version.id, dataset.id)
    python = _every_verdict(sessions, version, dataset)
    changed = 0
    for (these, cid), share in kept.items():
        expected = agreement.disagreements(python.data, list(these), cid)
        assert agreement_lists.disagreement_list(sessions, now, list(these), cid,
                                                 share) == expected
        changed += expected != before[these, cid]
    assert changed > 0  # the verdicts did change lists: the kept share was put to the test


def _new_grade(sessions, version, dataset, report, keys):
    """A grade landing for the first run, on a response it had not graded, against the
    second run's verdict: a disagreement between the two that was not there."""
    first = report.data.source(keys[1]).run_id
    graded = {r.response_id for r in runs.list_grades(sessions, first)}
    for response in datasets.list_responses(sessions, dataset.id):
        if response.id in graded:
            continue
        theirs = [agreement.gather_sources(sessions, version.id, dataset.id)
                  .verdicts[keys[2]].get((response.id, c.id)) for c in version.criteria]
        if any(v in (M, U) for v in theirs):
            runs.record_grade(sessions, first, response.id, judge_report(
                CRITERIA, [U if v is M else M for v in theirs], ScoringSettings(),
                response.output))
            return
    raise AssertionError("no ungraded response to grade")


def test_a_grade_landing_moves_the_judges_stamp_and_the_kept_share_is_stale(sessions):
    version, dataset = _random_world(sessions, 24, responses=40)
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    keys = [s.key for s in report.data.verdict_sources]
    pair = keys[1:3]
    kept = {c.id: agreement_lists.judge_listing(sessions, report.data, pair, c.id)
            for c in version.criteria}
    stamp = _judge_stamp(sessions, version, dataset)

    _new_grade(sessions, version, dataset, report, keys)

    assert _judge_stamp(sessions, version, dataset) != stamp
    now = agreement.agreement_report(sessions, version.id, dataset.id)
    python = _every_verdict(sessions, version, dataset)
    stale = 0
    for cid, share in kept.items():
        expected = agreement.disagreements(python.data, pair, cid)
        stale += agreement_lists.disagreement_list(sessions, now, pair, cid, share) != expected
        assert agreement_lists.disagreement_list(sessions, now, pair, cid) == expected
    assert stale > 0  # kept past the grade, the share would have listed the old verdicts


def test_a_run_or_panel_added_moves_the_judges_stamp(sessions):
    version, dataset = _random_world(sessions, 25, responses=12)
    stamp = _judge_stamp(sessions, version, dataset)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/new", actor=ADMIN)
    assert _judge_stamp(sessions, version, dataset) != stamp
    stamp = _judge_stamp(sessions, version, dataset)
    made = [r.id for r in runs.list_runs(sessions, rubric_version_id=version.id,
                                         dataset_id=dataset.id) if r.id != run.id]
    panels.create_panel(sessions, run_ids=made[:2], rule="unanimous", actor=ADMIN)
    assert _judge_stamp(sessions, version, dataset) != stamp


def test_a_panel_whose_stored_decisions_are_not_the_ones_read_is_listed_through_the_gather(
        sessions):
    version, dataset = _random_world(sessions, 26, responses=12)
    panel = unsettled_panel(sessions, version, dataset)
    # (the report reads every verdict then; the data as a counted one would hold it)
    data = agreement.gather_sources(sessions, version.id, dataset.id, complete=False)
    key = f"panel:{panel.id}"
    assert agreement_lists.judge_listing(sessions, data, ["run:1", key],
                                         version.criteria[0].id) is None
    assert agreement_lists.judge_listing(sessions, data, ["run:1", "run:2"],
                                         version.criteria[0].id) is not None
