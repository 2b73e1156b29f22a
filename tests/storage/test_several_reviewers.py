"""Several reviewers per response: own histories, consensus / dispute / adjudication, carry
forward across versions, review sets and queues, blindness, permissions — on both databases."""

from __future__ import annotations

import pytest

from grading.types import Verdict
from storage.errors import InvalidInputError, StaleVerdictError
from storage.services import consensus, review_queue, review_sets, reviews, rubrics
from storage.services.reviewers import Actor, PermissionDeniedError, Role, local_actor
from tests.storage.helpers import CRITERIA, make_dataset, make_rubric, make_run
from tests.storage.judges import ScriptedJudge, grade

V = Verdict
ANA, BO, CY = local_actor("ana"), local_actor("bo"), local_actor("cy")
REVIEWER_ONLY = Actor(key="dee@example.org", name="Dee", roles=frozenset({Role.REVIEWER}))
ADJUDICATOR = Actor(key="eve@example.org", name="Eve", roles=frozenset({Role.ADJUDICATOR}))
NOBODY = Actor(key="guest@example.org", name="Guest", roles=frozenset())


def _graded(sessions, count=2, verdicts=(V.MET, V.UNMET, V.MET, V.UNMET)):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=count)
    run = make_run(sessions, version.id, dataset.id)
    from storage.services import runs

    texts = {r.id: f"[r{i}] answer" for i, r in enumerate(responses)}
    judge = ScriptedJudge(CRITERIA, {f"r{i}": list(verdicts) for i in range(count)})
    for response in responses:
        report = grade("per_criterion", run.settings, CRITERIA, texts[response.id], judge)
        runs.record_grade(sessions, run.id, response.id, report)
    return version, dataset, responses, run


def _say(sessions, actor, response, criterion, verdict, note=""):
    return reviews.set_human_verdict(sessions, actor=actor, response_id=response.id,
                                     criterion_id=criterion.id, verdict=verdict, note=note)


def _effective(sessions, run, response):
    [g] = reviews.effective_grades_for_run(sessions, run.id, [response.id])
    return g


def test_each_reviewer_keeps_an_own_history_and_current_verdict(sessions):
    version, _d, [response, *_], _run = _graded(sessions)
    criterion = version.criteria[1]
    a1 = _say(sessions, ANA, response, criterion, "MET", "footnote")
    b1 = _say(sessions, BO, response, criterion, "UNMET", "a blog")
    a2 = _say(sessions, ANA, response, criterion, "UNMET", "on second look")
    assert (a1.seq, b1.seq, a2.seq) == (1, 1, 2)
    assert (a2.previous_verdict, a2.replaces_id, b1.previous_verdict) == (V.MET, a1.id, None)
    ana = reviews.verdict_history(sessions, response.id, stream="ana")
    assert [(h.reviewer, h.previous_verdict, h.verdict, h.note) for h in ana] == [
        ("ana", None, V.MET, "footnote"), ("ana", V.MET, V.UNMET, "on second look")]
    mine = reviews.current_verdicts(sessions, response.id, version.id, reviewer_key="bo")
    assert mine == {criterion.id: b1}
    assert len(reviews.verdict_history(sessions, response.id)) == 3


def test_agreed_verdicts_apply_a_dispute_keeps_the_judge_and_an_adjudication_decides(sessions):
    version, _d, [response, *_], run = _graded(sessions)
    cites = version.criteria[1]  # the judge said UNMET
    judge_score = _effective(sessions, run, response).judge_score

    _say(sessions, ANA, response, cites, "MET")
    _say(sessions, BO, response, cites, "MET")
    agreed = _effective(sessions, run, response)
    assert agreed.criteria[1].decision.status == "agreed"
    assert agreed.criteria[1].effective_verdict is V.MET and agreed.score > judge_score

    _say(sessions, CY, response, cites, "UNMET", "no source at all")
    disputed = _effective(sessions, run, response)
    row = disputed.criteria[1]
    assert row.disputed and row.human is None and row.effective_verdict is V.UNMET
    assert disputed.score == pytest.approx(judge_score) and disputed.disputed_count == 1
    assert [h.reviewer for h in row.decision.reviews] == ["ana", "bo", "cy"]
    [item] = review_queue.adjudication_queue(sessions, dataset_id=run.dataset_id,
                                             rubric_version_id=version.id)
    assert (item.response_id, item.criterion_id) == (response.id, cites.id)
    assert {h.note for h in item.decision.reviews} == {"", "no source at all"}

    reviews.adjudicate(sessions, actor=ADJUDICATOR, response_id=response.id,
                       criterion_id=cites.id, verdict="MET", note="the footnote counts",
                       expected_current_id=None)
    decided = _effective(sessions, run, response)
    assert decided.criteria[1].decision.status == "adjudicated"
    assert decided.criteria[1].effective_verdict is V.MET
    assert decided.score == pytest.approx(agreed.score)
    assert review_queue.adjudication_queue(sessions, dataset_id=run.dataset_id,
                                           rubric_version_id=version.id) == []
    # a later change of a reviewer does not undo the adjudication
    _say(sessions, ANA, response, cites, "UNMET")
    assert _effective(sessions, run, response).criteria[1].effective_verdict is V.MET


def test_cannot_assess_against_met_is_a_dispute():
    made = [
        _info(1, "ana", V.MET), _info(2, "bo", V.CANNOT_ASSESS),
    ]
    decision = consensus.decide(7, made, None)
    assert decision.status == "disputed" and decision.verdict is None
    assert consensus.decide(7, [], None) is None
    single = consensus.decide(7, made[:1], None)
    assert (single.status, single.verdict, single.applied) == ("agreed", V.MET, made[0])


def _info(id_, reviewer, verdict):
    from datetime import UTC, datetime

    from storage.dto import HumanVerdictInfo

    return HumanVerdictInfo(id=id_, response_id=1, rubric_version_id=1, criterion_id=7, seq=1,
                            verdict=verdict, reviewer=reviewer, note="",
                            created_at=datetime.now(UTC), replaces_id=None,
                            previous_verdict=None, reviewer_key=reviewer)


def test_a_stale_adjudication_form_is_refused(sessions):
    version, _d, [response, *_], _run = _graded(sessions)
    key = {"response_id": response.id, "criterion_id": version.criteria[0].id}
    first = reviews.adjudicate(sessions, actor=ADJUDICATOR, verdict="MET",
                               expected_current_id=None, **key)
    with pytest.raises(StaleVerdictError, match="Eve changed this verdict to MET"):
        reviews.adjudicate(sessions, actor=ANA, verdict="UNMET", expected_current_id=None,
                           **key)
    second = reviews.adjudicate(sessions, actor=ANA, verdict="UNMET",
                                expected_current_id=first.id, **key)
    assert second.adjudication and second.previous_verdict is V.MET


def test_an_adjudication_is_refused_when_a_reviewer_answered_after_the_card_was_shown(sessions):
    from storage.services.adjudication_check import shown_reviews

    version, _d, [response, *_], _run = _graded(sessions)
    criterion = version.criteria[1]
    key = {"response_id": response.id, "criterion_id": criterion.id}
    _say(sessions, ANA, response, criterion, "MET")
    _say(sessions, BO, response, criterion, "UNMET")

    def card():
        [item] = [i for i in review_queue.adjudication_queue(
            sessions, dataset_id=_d.id, rubric_version_id=version.id)
            if i.response_id == response.id]
        return shown_reviews(item.decision.reviews)

    seen = card()
    assert set(seen) == {"ana", "bo"}
    _say(sessions, BO, response, criterion, "CANNOT_ASSESS")  # still disputed, another answer
    with pytest.raises(StaleVerdictError, match=r"bo answered CANNOT_ASSESS .* decide again"):
        reviews.adjudicate(sessions, actor=ADJUDICATOR, verdict="MET",
                           expected_current_id=None, expected_reviews=seen, **key)
    seen = card()
    _say(sessions, CY, response, criterion, "UNMET")  # a reviewer answering for the first time
    with pytest.raises(StaleVerdictError, match="cy answered UNMET"):
        reviews.adjudicate(sessions, actor=ADJUDICATOR, verdict="MET",
                           expected_current_id=None, expected_reviews=seen, **key)
    assert not [h for h in reviews.verdict_history(sessions, response.id) if h.adjudication]
    decided = reviews.adjudicate(sessions, actor=ADJUDICATOR, verdict="MET",
                                 expected_current_id=None, expected_reviews=card(), **key)
    assert decided.adjudication and decided.verdict is V.MET


def test_permissions_are_refused_in_the_service(sessions):
    version, dataset, [response, *_], _run = _graded(sessions)
    key = {"response_id": response.id, "criterion_id": version.criteria[0].id}
    with pytest.raises(PermissionDeniedError, match="Dee may not adjudicate"):
        reviews.adjudicate(sessions, actor=REVIEWER_ONLY, verdict="MET", **key)
    with pytest.raises(PermissionDeniedError, match="Guest may not save a verdict"):
        reviews.set_human_verdict(sessions, actor=NOBODY, verdict="MET", **key)
    with pytest.raises(PermissionDeniedError, match="sign in"):
        reviews.set_human_verdict(sessions, actor=None, verdict="MET", **key)
    with pytest.raises(PermissionDeniedError, match="needs an admin"):
        review_sets.update_settings(sessions, actor=ADJUDICATOR, dataset_id=dataset.id,
                                    rubric_version_id=version.id, reviewers_per_response=2)
    assert reviews.verdict_history(sessions, response.id) == []
    # what the roles do allow
    _say(sessions, REVIEWER_ONLY, response, version.criteria[0], "MET")
    _say(sessions, ADJUDICATOR, response, version.criteria[0], "MET")
    with pytest.raises(InvalidInputError, match="between 1 and"):
        review_sets.update_settings(sessions, actor=ANA, dataset_id=dataset.id,
                                    rubric_version_id=version.id, reviewers_per_response=0)


def test_verdicts_carry_to_later_versions_while_the_requirement_text_stays(sessions):
    version, dataset, [response, *_], _run = _graded(sessions)
    accurate, cites = version.criteria[0], version.criteria[1]
    _say(sessions, ANA, response, accurate, "UNMET", "wrong dose")
    _say(sessions, ANA, response, cites, "MET")
    # v2 changes a weight and a name (same meaning) and rewrites one requirement
    changed = [c.model_copy(update={"weight": 3.0}) if i == 0 else c for i, c in
               enumerate(CRITERIA)]
    changed[1] = changed[1].model_copy(update={"requirement": "Cites a peer-reviewed source"})
    changed[2] = changed[2].model_copy(update={"name": "brief"})
    v2 = rubrics.save_criteria(sessions, version.id, changed, actor=ANA)
    run2 = make_run(sessions, v2.id, dataset.id)
    current = reviews.current_verdicts(sessions, response.id, v2.id)
    assert set(current) == {v2.criteria[0].id}
    assert current[v2.criteria[0].id].verdict is V.UNMET
    detail = review_queue.response_detail(sessions, response.id, v2.id, [run2.id])
    carried = detail.humans[v2.criteria[0].id]
    assert carried.carried_from == version.number and carried.status == "agreed"
    assert v2.criteria[1].id not in detail.humans  # requirement changed: the carry ends
    history = reviews.verdict_history(sessions, response.id, rubric_version_id=v2.id)
    assert [(h.criterion_id, h.rubric_version_id) for h in history] == [
        (v2.criteria[0].id, version.id)]
    # a verdict given on v2 wins over the carried one for that reviewer
    _say(sessions, ANA, response, v2.criteria[0], "MET")
    decision = review_queue.response_detail(sessions, response.id, v2.id).humans[
        v2.criteria[0].id]
    assert decision.verdict is V.MET and decision.carried_from is None
    # v3 restores the old text of "cites": v1's verdict stays behind (v2 ended the carry)
    v3 = rubrics.save_criteria(sessions, v2.id, CRITERIA, actor=ANA)
    assert v3.criteria[1].id not in reviews.current_verdicts(sessions, response.id, v3.id)
    assert reviews.current_verdicts(sessions, response.id, v3.id)[
        v3.criteria[0].id].verdict is V.MET


def test_queues_follow_reviewers_per_response_and_coverage_counts_them(sessions):
    version, dataset, responses, run = _graded(sessions, count=3)
    review_sets.update_settings(sessions, actor=ANA, dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=2)
    first = responses[0]
    for criterion in version.criteria:
        _say(sessions, ANA, first, criterion, "MET")

    def queue(actor):
        return [i.response_id for i in review_queue.review_queue(
            sessions, dataset_id=dataset.id, rubric_version_id=version.id,
            run_ids=[run.id], unreviewed_only=True, reviewer_key=actor.key)]

    assert first.id not in queue(ANA) and len(queue(ANA)) == 2
    assert first.id in queue(BO)
    for criterion in version.criteria:
        _say(sessions, BO, first, criterion, "MET")
    assert first.id not in queue(CY)  # two complete reviews: it needs nobody else
    _say(sessions, CY, responses[1], version.criteria[0], "MET")  # started, not finished
    assert responses[1].id in queue(CY) and first.id not in queue(CY)
    cover = review_sets.coverage(sessions, dataset.id, version.id)
    assert cover.by_reviewers == {0: 2, 2: 1} and cover.complete == 1
    progress = {p.reviewer: (p.responses_done, p.responses_started) for p in cover.reviewers}
    assert progress == {"ana": (1, 1), "bo": (1, 1), "cy": (0, 1)}


def test_the_random_sample_is_the_same_for_every_reviewer(sessions):
    version, dataset, _responses, run = _graded(sessions, count=6)
    review_sets.update_settings(sessions, actor=ANA, dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=2,
                                sample_size=2)
    orders = [[i.response_id for i in review_queue.review_queue(
        sessions, dataset_id=dataset.id, rubric_version_id=version.id, run_ids=[run.id],
        reviewer_key=who)] for who in ("ana", "bo")]
    assert orders[0] == orders[1]
    sampled = [i for i in review_queue.review_queue(
        sessions, dataset_id=dataset.id, rubric_version_id=version.id, run_ids=[run.id],
        reviewer_key="ana") if i.in_sample]
    assert len(sampled) == 2
    assert [i.response_id for i in review_queue.review_queue(
        sessions, dataset_id=dataset.id, rubric_version_id=version.id, run_ids=[run.id],
        reviewer_key="ana")][:2] == [i.response_id for i in sampled]


def test_other_reviewers_are_hidden_until_the_viewer_answered(sessions):
    version, _d, [response, *_], run = _graded(sessions)
    cites = version.criteria[1]
    _say(sessions, ANA, response, cites, "MET", "see the footnote")
    blind = review_queue.response_detail(sessions, response.id, version.id, [run.id],
                                         viewer="bo")
    assert cites.id in blind.hidden and cites.id not in blind.humans
    assert blind.history == ()
    _say(sessions, BO, response, cites, "UNMET")
    seen = review_queue.response_detail(sessions, response.id, version.id, [run.id],
                                        viewer="bo")
    assert not seen.hidden and seen.humans[cites.id].disputed
    assert seen.mine[cites.id].reviewer == "bo"
    assert {h.reviewer for h in seen.history} == {"ana", "bo"}
    adjudicator = review_queue.response_detail(sessions, response.id, version.id,
                                               viewer="eve@example.org", see_all=True)
    assert not adjudicator.hidden and cites.id in adjudicator.humans



def test_each_reviewers_queue_puts_disagreements_and_failures_first_then_the_sample(sessions):
    """Two runs over six responses: r1 the judges disagree on, r2 one failed on; two
    reviewers per response and a random sample of two."""
    from grading.types import ScoringSettings
    from storage.services import datasets, runs
    from tests.storage.helpers import judge_report

    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, count=6)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    run_a, run_b = (make_run(sessions, version.id, dataset.id) for _ in range(2))
    for i, response in enumerate(responses):
        runs.record_grade(sessions, run_a.id, response.id, judge_report(
            CRITERIA, [V.MET, V.UNMET, V.MET, V.UNMET], ScoringSettings(), response.output))
        second = {1: [V.MET, V.MET, V.MET, V.UNMET], 2: [V.MET, V.UNMET, None, V.UNMET]}
        runs.record_grade(sessions, run_b.id, response.id, judge_report(
            CRITERIA, second.get(i, [V.MET, V.UNMET, V.MET, V.UNMET]), ScoringSettings(),
            response.output))
    review_sets.update_settings(sessions, actor=ANA, dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=2,
                                sample_size=2)
    ids = [r.id for r in responses]
    sample = review_sets.sample_ids(dataset.id, version.id, ids, 2)

    def queue(actor, unreviewed_only=True):
        return [i.response_id for i in review_queue.review_queue(
            sessions, dataset_id=dataset.id, rubric_version_id=version.id,
            run_ids=[run_a.id, run_b.id], unreviewed_only=unreviewed_only,
            reviewer_key=actor.key)]

    rest = [rid for rid in ids[3:] + ids[:1] if rid not in sample]
    expected = [ids[1], ids[2], *[rid for rid in sample if rid not in ids[1:3]],
                *sorted(rest)]
    assert queue(CY) == queue(ANA) == expected
    # ana finishes the disagreement: it leaves her queue, stays first in cy's (one more
    # reviewer needed); once bo has finished it too, it leaves everyone's
    for criterion in version.criteria:
        _say(sessions, ANA, responses[1], criterion, "MET")
    assert queue(ANA) == expected[1:] and queue(CY) == expected
    for criterion in version.criteria:
        _say(sessions, BO, responses[1], criterion, "MET")
    assert queue(CY) == expected[1:]
    # the whole queue keeps it, at the end: it needs nobody else
    assert queue(CY, unreviewed_only=False) == [*expected[1:], ids[1]]


def test_review_set_settings_are_in_the_activity_log(sessions):
    from storage.services import people

    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, count=2)

    def changes():
        return [(e.actor, e.action, e.target_kind, e.target_id, e.target_name, e.detail)
                for e in people.list_audit_events(sessions) if e.action == "set review set"]

    review_sets.update_settings(sessions, actor=ANA, dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=2)
    review_sets.update_settings(sessions, actor=ANA, dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=3,
                                sample_size=10)
    review_sets.update_settings(sessions, actor=ANA, dataset_id=dataset.id,  # no change
                                rubric_version_id=version.id, reviewers_per_response=3,
                                sample_size=10)
    rubric = f"{rubrics.get_version(sessions, version.id).rubric_name} v1"
    assert changes() == [  # newest first
        (ANA.key, "set review set", "dataset", dataset.id, dataset.name,
         f"{rubric}: 3 reviewer(s) per response, a random sample of 10"),
        (ANA.key, "set review set", "dataset", dataset.id, dataset.name,
         f"{rubric}: 2 reviewer(s) per response, every response"),
    ]


def test_a_save_shown_under_another_name_is_refused_and_never_reattributed(sessions):
    """The page showed Bo; Cy acts now (renamed in another tab): nothing is written, under
    either name, and the message names both."""
    from storage.services.reviewers import IdentityChangedError

    version, _d, [response, *_], _run = _graded(sessions)
    criterion = version.criteria[0]
    with pytest.raises(IdentityChangedError, match=r"showed you as 'bo'.*now act as 'cy'"):
        reviews.save_review(sessions, actor=CY, response_id=response.id,
                            verdicts={criterion.id: ("MET", "")}, shown_as="bo")
    assert reviews.verdict_history(sessions, response.id) == []
    saved = reviews.save_review(sessions, actor=CY, response_id=response.id,
                                verdicts={criterion.id: ("MET", "")}, shown_as="cy")
    assert [h.reviewer for h in saved.saved] == ["cy"]


def test_review_set_settings_carry_to_new_versions_until_changed_there(sessions):
    version, dataset, _responses, _run = _graded(sessions)
    review_sets.update_settings(sessions, actor=ANA, dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=3)

    def next_version(of):
        rubrics.freeze_version(sessions, of.id, actor=ANA)
        return rubrics.save_criteria(sessions, of.id, list(CRITERIA), actor=ANA)

    v2 = next_version(version)
    v3 = next_version(v2)
    assert v3.number == version.number + 2
    assert review_sets.get_settings(sessions, dataset.id, v3.id).reviewers_per_response == 3
    review_sets.update_settings(sessions, actor=ANA, dataset_id=dataset.id,
                                rubric_version_id=v2.id, reviewers_per_response=2)
    on_v2 = review_sets.get_settings(sessions, dataset.id, v2.id)
    on_v3 = review_sets.get_settings(sessions, dataset.id, v3.id)
    assert (on_v2.reviewers_per_response, on_v2.carried_from) == (2, None)
    assert (on_v3.reviewers_per_response, on_v3.carried_from) == (2, v2.number)
    # the older version keeps its own; another dataset has none to carry
    assert review_sets.get_settings(sessions, dataset.id, version.id).reviewers_per_response \
        == 3
    other, _ = make_dataset(sessions, count=1, name="Other")
    assert review_sets.get_settings(sessions, other.id, v3.id).reviewers_per_response == 1
