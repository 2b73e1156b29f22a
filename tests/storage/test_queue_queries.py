"""The queues from SQL (issue 41): the adjudication queue reads only the criteria where
reviewers gave different choices, the reviewer counts come from one GROUP BY, and both read
the verdict table through indexes (EXPLAIN), never by a full scan. Same results as the
consensus rule run on every reviewed response."""

from __future__ import annotations

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
            verdict_repo.answered_counts_query(dataset.id, sources))


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
