"""The reviewer's queue built from its order (storage/services/queue_items.py) answers what
the queue answered when it built and sorted every item (``_queue_as_before`` below, the code
it replaced), on random histories, on both databases."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import select

from grading.types import ScoringSettings, Verdict
from storage import models as m
from storage.repositories import datasets as dataset_repo
from storage.repositories import results as repo
from storage.services import review_queue, review_sets, reviews, runs
from storage.services.queue_items import QueueItem, queue_order, standing
from storage.services.results import DEFAULT_SCORE_GAP, grade_facts
from storage.services.reviewers import local_actor
from tests.storage.helpers import ADMIN, CRITERIA, judge_report, make_dataset, make_rubric

V = Verdict
REVIEWERS = [local_actor(name) for name in ("ana", "bo", "cy")]


def _queue_as_before(sessions, *, dataset_id, rubric_version_id, run_ids,
                     unreviewed_only=False, reviewer_key=None):
    """The queue as it was computed before (every item built, then sorted)."""
    with sessions() as session:
        runs_ = repo.check_runs(session, dataset_id, rubric_version_id, run_ids)
        criteria_count = repo.criteria_count(session, rubric_version_id)
        failed = repo.failed_ids(session, runs_)
        disagree = repo.disagree_ids(session, runs_, DEFAULT_SCORE_GAP)
        settings = review_sets.settings_of(session, dataset_id, rubric_version_id)
        counts = review_sets.answered_counts(session, dataset_id, rubric_version_id)
        ids = (repo.run_response_ids(session, runs_) if runs_
               else dataset_repo.response_ids(session, dataset_id))
        external = repo.external_ids(session, dataset_id)
    need = settings.reviewers_per_response
    sample = review_sets.sample_ids(dataset_id, rubric_version_id, sorted(ids),
                                    settings.sample_size)
    rank = {rid: i for i, rid in enumerate(sample)}
    items = []
    for rid in ids:
        per = counts.get(rid, {})
        complete = sum(1 for n in per.values() if criteria_count and n >= criteria_count)
        if reviewer_key is None:
            mine = max(per.values(), default=0) if complete < need else criteria_count
            needs = complete < need
        else:
            mine = per.get(reviewer_key, 0)
            done = criteria_count > 0 and mine >= criteria_count
            needs = not done and (mine > 0 or complete < need)
        items.append(QueueItem(
            response_id=rid, external_id=external.get(rid), disagree=rid in disagree,
            failed=rid in failed, reviewed_count=mine, criteria_count=criteria_count,
            reviewers=complete, needs_review=needs, in_sample=rid in rank))
    if unreviewed_only:
        items = [i for i in items if i.needs_review]
    return sorted(items, key=lambda i: (
        not i.needs_review, not i.disagree, not i.failed, rank.get(i.response_id, len(rank)),
        i.response_id))


def _random_world(sessions, seed: int):
    """Three runs over 40 responses (the third over a selection of them), judges that
    disagree and fail now and then, three reviewers, some finished, some started."""
    rng = random.Random(seed)
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=40)
    ids = [r.id for r in responses]
    chosen = sorted(rng.sample(ids, 25))
    made = [runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader="per_criterion", model="openai/test-judge",
                            response_ids=selection, actor=ADMIN)
            for selection in (None, None, chosen)]
    by_id = {r.id: r for r in responses}
    for run in made:
        covered = ids if run is not made[2] else chosen
        for rid in covered:
            if rng.random() < 0.15:
                continue  # not graded (yet)
            verdicts = [rng.choice([V.MET, V.UNMET]) if rng.random() < 0.3 else V.MET
                        for _ in CRITERIA]
            if rng.random() < 0.1:
                verdicts[rng.randrange(len(CRITERIA))] = None  # a failed criterion
            runs.record_grade(sessions, run.id, rid, judge_report(
                CRITERIA, verdicts, ScoringSettings(), by_id[rid].output))
    review_sets.update_settings(sessions, actor=ADMIN, dataset_id=dataset.id,
                                rubric_version_id=version.id,
                                reviewers_per_response=rng.choice([1, 2]),
                                sample_size=rng.choice([5, 60]))
    for rid in rng.sample(ids, 12):
        for who in rng.sample(REVIEWERS, rng.randint(1, 3)):
            answered = version.criteria if rng.random() < 0.6 else rng.sample(
                version.criteria, rng.randint(1, len(version.criteria) - 1))
            for criterion in answered:
                reviews.set_human_verdict(sessions, actor=who, response_id=rid,
                                          criterion_id=criterion.id,
                                          verdict=rng.choice(["MET", "UNMET"]))
    return version, dataset, [run.id for run in made]


@pytest.mark.parametrize("seed", [1, 2])
def test_the_queue_from_its_order_equals_the_queue_sorted_as_before(sessions, seed):
    version, dataset, run_ids = _random_world(sessions, seed)
    where = {"dataset_id": dataset.id, "rubric_version_id": version.id}
    selections = [run_ids, run_ids[:2], run_ids[2:], run_ids[::-1], [run_ids[2], run_ids[0]],
                  []]
    for selection in selections:
        facts = grade_facts(sessions, **where, run_ids=selection) if selection else None
        covered = review_queue.covered_responses(sessions, **where, run_ids=selection)
        for reviewer_key in (None, "ana", "bo", "cy", "dee"):
            for unreviewed_only in (False, True):
                expected = _queue_as_before(sessions, **where, run_ids=selection,
                                            unreviewed_only=unreviewed_only,
                                            reviewer_key=reviewer_key)
                for cached in ({}, {"facts": facts, "covered": covered}):
                    queue = review_queue.review_queue(
                        sessions, **where, run_ids=selection, unreviewed_only=unreviewed_only,
                        reviewer_key=reviewer_key, **cached)
                    assert list(queue) == expected
                    assert len(queue) == len(expected)
                    assert queue.response_ids == tuple(i.response_id for i in expected)
                    if expected:
                        assert queue[0] == expected[0] and queue[-1] == expected[-1]
                        assert queue[3:7] == expected[3:7]
                        last = expected[-1].response_id
                        assert queue.position_of(last) == len(expected) - 1
    assert any(i.in_sample for i in expected)  # the sample was in play


def test_covered_responses_merge_runs_over_other_selections(sessions):
    version, dataset, run_ids = _random_world(sessions, 3)
    where = {"dataset_id": dataset.id, "rubric_version_id": version.id}
    with sessions() as session:
        every = sorted(repo.run_response_ids(session, run_ids))
        selected = sorted(repo.run_response_ids(session, run_ids[2:]))
        whole = dataset_repo.response_ids(session, dataset.id)
    assert len(selected) == 25 and every == whole
    assert review_queue.covered_responses(sessions, **where, run_ids=run_ids[2:]) == tuple(
        selected)
    assert review_queue.covered_responses(sessions, **where, run_ids=run_ids[::-1]) == tuple(
        every)
    assert review_queue.covered_responses(sessions, **where, run_ids=[]) == tuple(whole)


def test_a_response_nobody_covers_is_not_in_the_queue_and_has_no_position(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=4)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/test-judge",
                          response_ids=[responses[1].id, responses[3].id], actor=ADMIN)
    queue = review_queue.review_queue(sessions, dataset_id=dataset.id,
                                      rubric_version_id=version.id, run_ids=[run.id])
    assert queue.response_ids == (responses[1].id, responses[3].id)
    assert [i.external_id for i in queue] == ["r1", "r3"]
    assert queue.position_of(responses[0].id) is None


@pytest.mark.parametrize(("needs", "default", "unreviewed_only", "expected"), [
    pytest.param({}, True, False, [6, 2, 3, 1, 4, 5], id="disagree-then-failed-then-id"),
    pytest.param({2: False}, True, False, [6, 3, 1, 4, 5, 2], id="done-goes-last"),
    pytest.param({2: False}, True, True, [6, 3, 1, 4, 5], id="done-left-out"),
    pytest.param({4: True}, False, True, [4], id="only-what-is-needed"),
])
def test_queue_order_puts_needed_disagreements_failures_then_the_sample(
        needs, default, unreviewed_only, expected):
    order = queue_order([1, 2, 3, 4, 5, 6], needs=needs, default_needs=default,
                        disagree={2, 6}, failed={3, 6}, sample=[], unreviewed_only=unreviewed_only)
    assert order == expected
    sampled = queue_order([1, 2, 3, 4, 5, 6], needs={}, default_needs=True, disagree=set(),
                          failed=set(), sample=[5, 3], unreviewed_only=False)
    assert sampled == [5, 3, 1, 2, 4, 6]


def test_standing_of_a_response_nobody_reviewed():
    assert standing({}, 4, 2, "ana") == standing({}, 4, 2, None)
    assert standing({"ana": 4, "bo": 4}, 4, 2, "cy").needs is False
    assert standing({"ana": 2}, 4, 1, "ana").needs is True


def test_the_failure_queries_read_only_the_failures_through_their_partial_indexes(sessions):
    from tests.storage.test_agreement_counts import _full_scans, _plan

    _version, _dataset, run_ids = _random_world(sessions, 4)
    whole, partial = repo.failed_queries(run_ids)
    for query, index in ((whole, "ix_grades_failed"), (partial, "ix_grade_criteria_failed")):
        plan = _plan(sessions, query)
        assert index in plan, plan
        assert not [line for line in _full_scans(plan, "grade_criteria") + _full_scans(
            plan, "grades") if index not in line], plan
    with sessions() as session:
        failed = repo.failed_ids(session, run_ids)
        # the same responses as the join over every grade x criterion it replaced
        joined = set(session.scalars(
            select(m.GradeRow.response_id)
            .join(m.GradeCriterionRow, m.GradeCriterionRow.grade_id == m.GradeRow.id)
            .where(m.GradeRow.run_id.in_(run_ids), m.GradeCriterionRow.error.is_not(None))))
        scored = set(session.scalars(select(m.GradeRow.response_id).where(
            m.GradeRow.run_id.in_(run_ids), m.GradeRow.score.is_(None))))
    assert joined and failed == joined | scored
