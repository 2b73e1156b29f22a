"""The queues from SQL (issue 41): the adjudication queue reads only the criteria where
reviewers gave different choices, the reviewer counts come from one GROUP BY, and both read
the verdict table through indexes (EXPLAIN), never by a full scan. Same results as the
consensus rule run on every reviewed response."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import select

from grading.types import Verdict
from storage import models as m
from storage.repositories import results as results_repo
from storage.repositories import verdicts as verdict_repo
from storage.services import consensus, review_queue, review_sets, reviews, rubrics
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, make_dataset, make_rubric, make_run
from tests.storage.test_agreement_counts import _full_scans, _plan
from tests.storage.test_criterion_kinds_reviews import graded  # noqa: F401 (a fixture)

V = Verdict
ANA, BO, CY = local_actor("ana"), local_actor("bo"), local_actor("cy")


def _say(sessions, actor, response_id, criterion_id, verdict):
    reviews.set_human_verdict(sessions, actor=actor, response_id=response_id,
                              criterion_id=criterion_id, verdict=verdict)


def _every_reviewed(sessions, dataset_id, version_id, include_resolved=False):
    """What the queue was before: the consensus of every reviewed response, whole."""
    with sessions() as session:
        ids = verdict_repo.response_ids_reviewed_in(session, dataset_id, version_id)
        decisions = consensus.decisions(session, ids, version_id)
        external = results_repo.external_ids(session, dataset_id)
    return sorted(
        (rid, external.get(rid), cid, d.status, tuple(h.id for h in d.reviews))
        for rid, per in decisions.items() for cid, d in per.items()
        if d.disputed or (include_resolved and d.status == "adjudicated"
                          and len({h.choice for h in d.reviews}) > 1))


def _queue(sessions, dataset_id, version_id, include_resolved=False):
    return sorted(
        (i.response_id, i.external_id, i.criterion_id, i.decision.status,
         tuple(h.id for h in i.decision.reviews))
        for i in review_queue.adjudication_queue(
            sessions, dataset_id=dataset_id, rubric_version_id=version_id,
            include_resolved=include_resolved))


def _reviewed_world(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=4)
    accurate, cites, concise, _harmful = (c.id for c in version.criteria)
    r0, r1, r2, r3 = (r.id for r in responses)
    _say(sessions, ANA, r0, cites, "MET")  # a dispute
    _say(sessions, BO, r0, cites, "UNMET")
    _say(sessions, ANA, r0, accurate, "MET")  # agreed on the same response
    _say(sessions, BO, r0, accurate, "MET")
    _say(sessions, ANA, r1, cites, "UNMET")  # ana changed her mind: agreed now
    _say(sessions, ANA, r1, cites, "MET")
    _say(sessions, BO, r1, cites, "MET")
    _say(sessions, ANA, r2, concise, "MET")  # adjudicated
    _say(sessions, BO, r2, concise, "CANNOT_ASSESS")
    reviews.adjudicate(sessions, actor=ADMIN, response_id=r2, criterion_id=concise,
                       verdict="MET")
    _say(sessions, ANA, r3, accurate, "UNMET")  # one reviewer only
    return version, dataset, responses


def test_the_adjudication_queue_is_the_consensus_of_every_reviewed_response(sessions):
    version, dataset, responses = _reviewed_world(sessions)
    cites = version.criteria[1].id
    for resolved in (False, True):
        assert _queue(sessions, dataset.id, version.id, resolved) == _every_reviewed(
            sessions, dataset.id, version.id, resolved)
    [item] = review_queue.adjudication_queue(sessions, dataset_id=dataset.id,
                                             rubric_version_id=version.id)
    assert (item.response_id, item.criterion_id) == (responses[0].id, cites)
    assert [h.verdict for h in item.decision.reviews] == [V.MET, V.UNMET]
    assert len(_queue(sessions, dataset.id, version.id, True)) == 2
    # a reviewer changing their mind empties the queue; the old rows stay in the history
    _say(sessions, BO, responses[0].id, cites, "MET")
    assert _queue(sessions, dataset.id, version.id) == [] == _every_reviewed(
        sessions, dataset.id, version.id)


def test_a_dispute_between_a_carried_verdict_and_a_new_one_is_queued(sessions):
    version, dataset, [response, *_] = _reviewed_world(sessions)
    _say(sessions, ANA, response.id, version.criteria[2].id, "MET")  # on v1
    v2 = rubrics.save_criteria(sessions, version.id, [
        c.model_copy(update={"weight": 1.0}) for c in CRITERIA], actor=ADMIN)
    make_run(sessions, v2.id, dataset.id)
    concise = v2.criteria[2].id
    _say(sessions, CY, response.id, concise, "UNMET")  # against ana's MET carried from v1
    for resolved in (False, True):
        assert _queue(sessions, dataset.id, v2.id, resolved) == _every_reviewed(
            sessions, dataset.id, v2.id, resolved)
    assert {(rid, cid) for rid, _e, cid, _s, _h in _queue(sessions, dataset.id, v2.id)} == {
        (response.id, v2.criteria[1].id), (response.id, concise)}


def test_options_are_compared_by_label_not_by_verdict(sessions, graded):  # noqa: F811
    _grade, response_id, ids = graded
    for actor, label in ((ANA, "Good"), (BO, "good")):  # the same option
        _say(sessions, actor, response_id, ids["clarity"], label)
    for actor, label in ((ANA, "formal"), (BO, "casual")):  # two options
        _say(sessions, actor, response_id, ids["tone"], label)
    with sessions() as session:
        dataset_id = session.get(m.ResponseRow, response_id).dataset_id
    queue = _queue(sessions, dataset_id, ids["version"])
    assert [(rid, cid) for rid, _e, cid, _s, _h in queue] == [(response_id, ids["tone"])]
    assert queue == _every_reviewed(sessions, dataset_id, ids["version"])


def test_reviewer_counts_from_sql_are_each_reviewers_answered_criteria(sessions):
    version, dataset, responses = _reviewed_world(sessions)
    v2 = rubrics.save_criteria(sessions, version.id, [
        c.model_copy(update={"weight": 1.0}) for c in CRITERIA], actor=ADMIN)
    _say(sessions, BO, responses[0].id, v2.criteria[0].id, "UNMET")  # on v1 too: one
    with sessions() as session:
        counts, _names, criteria = review_sets.reviewed_by(session, dataset.id, v2.id)
    r0, r1, r2, r3 = (r.id for r in responses)
    assert criteria == 4
    assert counts == {r0: {"ana": 2, "bo": 2}, r1: {"ana": 1, "bo": 1},
                      r2: {"ana": 1, "bo": 1}, r3: {"ana": 1}}


def _queue_queries(sessions):
    version, dataset, _responses = _reviewed_world(sessions)
    with sessions() as session:
        sources = verdict_repo.carry_sources(session, version.id)
    return (verdict_repo.disputed_candidates_query(dataset.id, sources),
            verdict_repo.answered_counts_query(dataset.id, sources),
            verdict_repo.dispute_page_query(dataset.id, sources, 20),
            verdict_repo.disputes_query(dataset.id, sources, [1, 2]))


def test_the_queue_queries_read_the_verdict_table_through_an_index(sessions):
    for query in _queue_queries(sessions):
        plan = _plan(sessions, query)
        assert "human_verdicts" in plan, plan
        assert not _full_scans(plan, "human_verdicts"), plan


def test_the_scan_check_catches_a_query_that_reads_every_human_verdict(sessions):
    _reviewed_world(sessions)
    plan = _plan(sessions, select(m.HumanVerdictRow.verdict)
                 .where(m.HumanVerdictRow.note == "x"))
    assert _full_scans(plan, "human_verdicts"), plan


def _item(i):
    adjudication = i.decision.adjudication
    return (i.response_id, i.external_id, i.criterion_id, i.criterion_label, i.decision.status,
            tuple(h.id for h in i.decision.reviews), adjudication.id if adjudication else None)


def _page(sessions, dataset_id, version_id, limit, keys=()):
    page = review_queue.adjudication_page(sessions, dataset_id=dataset_id,
                                          rubric_version_id=version_id, limit=limit,
                                          keys=keys)
    return page.disputed, [_item(i) for i in page.items]


def _assert_pages_are_the_queue(sessions, dataset_id, version_id):
    """Every page (each limit, each kept card) is the whole queue's head, item for item."""
    everything = [_item(i) for i in review_queue.adjudication_queue(
        sessions, dataset_id=dataset_id, rubric_version_id=version_id, include_resolved=True)]
    disputed = [i for i in everything if i[4] == "disputed"]
    for limit in range(len(disputed) + 2):
        assert _page(sessions, dataset_id, version_id, limit) == (
            len(disputed), disputed[:limit]), limit
    keys = [(i[0], i[2]) for i in everything]
    for kept in (keys[-3:], keys[:1], keys[::2]):
        expected = [i for i in everything if i in disputed[:2] or (i[0], i[2]) in kept]
        assert _page(sessions, dataset_id, version_id, 2, kept) == (len(disputed), expected)
    return everything


def _busy_world(sessions, seed):
    """Three reviewers on a dozen responses, minds changed, some disputes adjudicated (one
    twice), then a second version carrying most criteria, with new verdicts on it."""
    rng = random.Random(seed)
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=12)
    choices = ["MET", "UNMET", "CANNOT_ASSESS"]
    for response in responses:
        for criterion in version.criteria:
            for actor in rng.sample([ANA, BO, CY], rng.randint(0, 3)):
                for _ in range(rng.choice([1, 1, 2])):
                    _say(sessions, actor, response.id, criterion.id,
                         rng.choice(choices[:2] if rng.random() < 0.8 else choices))
    first = [(i.response_id, i.criterion_id) for i in review_queue.adjudication_queue(
        sessions, dataset_id=dataset.id, rubric_version_id=version.id)]
    for rid, cid in first[::3]:
        for verdict in rng.sample(choices, rng.choice([1, 2])):
            reviews.adjudicate(sessions, actor=ADMIN, response_id=rid, criterion_id=cid,
                               verdict=verdict)
    changed = [c.model_copy(update={"requirement": "Is short"}) if c.name == "concise" else c
               for c in CRITERIA]
    v2 = rubrics.save_criteria(sessions, version.id, changed, actor=ADMIN)
    make_run(sessions, v2.id, dataset.id)
    for response in rng.sample(responses, 6):
        criterion = rng.choice(v2.criteria)
        _say(sessions, rng.choice([ANA, BO, CY]), response.id, criterion.id, rng.choice(choices))
    return version, v2, dataset


def test_the_adjudication_page_is_the_head_of_the_whole_queue(sessions):
    version, dataset, responses = _reviewed_world(sessions)
    cites, concise = version.criteria[1].id, version.criteria[2].id
    everything = _assert_pages_are_the_queue(sessions, dataset.id, version.id)
    assert [(i[0], i[2], i[4]) for i in everything] == [
        (responses[0].id, cites, "disputed"), (responses[2].id, concise, "adjudicated")]
    # an agreed criterion asked for by name is no card; nor is one nobody answered
    assert _page(sessions, dataset.id, version.id, 5, [
        (responses[1].id, cites), (responses[3].id, concise)])[1] == everything[:1]
    # a reviewer changing their mind: the page's count and items follow at once
    _say(sessions, BO, responses[0].id, cites, "MET")
    assert _page(sessions, dataset.id, version.id, 5) == (0, [])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_adjudication_page_matches_the_queue_on_a_busy_history(sessions, seed):
    version, v2, dataset = _busy_world(sessions, seed)
    before = _assert_pages_are_the_queue(sessions, dataset.id, version.id)
    after = _assert_pages_are_the_queue(sessions, dataset.id, v2.id)
    assert any(i[4] == "disputed" for i in before), "the world has disputes"
    assert any(i[4] == "adjudicated" for i in before), "and resolved ones"
    assert after, "verdicts carried to the second version"


def test_the_adjudication_page_keeps_options_apart_by_label(sessions, graded):  # noqa: F811
    _grade, response_id, ids = graded
    for actor, label in ((ANA, "Good"), (BO, "good")):
        _say(sessions, actor, response_id, ids["clarity"], label)
    for actor, label in ((ANA, "formal"), (BO, "casual")):
        _say(sessions, actor, response_id, ids["tone"], label)
    with sessions() as session:
        dataset_id = session.get(m.ResponseRow, response_id).dataset_id
    count, items = _page(sessions, dataset_id, ids["version"], 10)
    assert (count, [(i[0], i[2]) for i in items]) == (1, [(response_id, ids["tone"])])


def test_a_carried_verdict_that_does_not_fit_the_criterion_now_is_no_dispute(sessions):
    """consensus._fits: a MET given when the criterion was binary is not carried onto the
    multi-choice criterion with the same requirement, so it disputes nothing there (the
    SQL dispute query listed one)."""
    from tests.kinds import LIKERT

    version, dataset, [response, *_] = _reviewed_world(sessions)
    _say(sessions, ANA, response.id, version.criteria[2].id, "MET")  # concise, binary on v1
    v2 = rubrics.save_criteria(sessions, version.id, [
        c.model_copy(update={"options": LIKERT} if c.name == "concise" else {})
        for c in CRITERIA], actor=ADMIN)
    make_run(sessions, v2.id, dataset.id)
    concise = v2.criteria[2].id
    _say(sessions, BO, response.id, concise, "Good")  # the only choice that fits now
    expected = [(rid, cid) for rid, _e, cid, status, _h
                in _every_reviewed(sessions, dataset.id, v2.id) if status == "disputed"]
    assert (response.id, concise) not in expected
    with sessions() as session:
        total, first, kept = verdict_repo.dispute_page(
            session, dataset.id, v2.id, 20, [(response.id, concise)])
        candidates = verdict_repo.disputed_candidates(session, dataset.id, v2.id)
    assert (total, first, kept) == (len(expected), expected, [])
    assert set(expected) <= set(candidates)
    assert _queue(sessions, dataset.id, v2.id) == _every_reviewed(sessions, dataset.id, v2.id)
