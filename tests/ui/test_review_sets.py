"""AppTest checks of several reviewers on the pages: the review set's coverage, progress and
settings; a verdict carried from an earlier version says which; a dispute on Results."""

from __future__ import annotations

import time

import pytest

from grading.types import ScoringSettings
from storage.services import review_sets, reviews, rubrics, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, judge_report
from tests.ui.pages import frame_with, open_page, texts
from tests.ui.seed import M, U, seed_graded
from tests.ui.test_review_page import _review


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _answer_all(seeded, response, who: str, verdict: str = "MET") -> None:
    for criterion in seeded.version.criteria:
        reviews.set_human_verdict(seeded.sessions, response_id=response.id,
                                  criterion_id=criterion.id, verdict=verdict,
                                  actor=local_actor(who))


def _number_input(at, label: str):
    return next(n for n in at.number_input if n.label == label)


def test_the_review_set_shows_coverage_and_progress_and_an_admin_sets_two_reviewers():
    seeded = seed_graded(count=3)
    r0, _r1, r2 = seeded.responses
    _answer_all(seeded, r0, "ana")
    _answer_all(seeded, r0, "bo")
    reviews.set_human_verdict(seeded.sessions, response_id=r2.id,  # started, not finished
                              criterion_id=seeded.version.criteria[0].id, verdict="MET",
                              actor=local_actor("ana"))
    at = _review("cy")
    shown = texts(at)
    assert "Review set: 1 reviewer per response · 1 of 3 responses have them" in [
        e.label for e in at.expander]
    assert "Coverage (responses by number of complete reviews): 0 reviewers: 2 · " \
           "2 reviewers: 1" in shown
    progress = frame_with(at, "Reviewer")
    assert [tuple(r) for r in progress[["Reviewer", "Responses done", "Started"]].values
            ] == [("ana", 1, 2), ("bo", 1, 1)]

    # local mode holds every role: the settings are the admin's to change
    _number_input(at, "Reviewers per response").set_value(2)
    _number_input(at, "Random sample (responses)").set_value(3)
    next(b for b in at.button if b.label == "Save settings").click().run()
    assert not at.exception, at.exception
    assert "Saved: the queues now follow these settings." in texts(at)
    settings = review_sets.get_settings(seeded.sessions, r0.dataset_id, seeded.version.id)
    assert (settings.reviewers_per_response, settings.sample_size) == (2, 3)
    assert "Review set: 2 reviewers per response · 1 of 3 responses have them" in [
        e.label for e in at.expander]
    # cy's queue: r0 has its two reviewers, so r1 and r2 (every one in the random sample)
    at.toggle(key="review_unreviewed_only").set_value(True).run()
    assert "**1 of 2** · r1 · judges disagree · random sample" in texts(at)


def _second_version(seeded):
    """v2 changes a weight only (the verdicts carry) and one requirement (they end)."""
    changed = [c.model_copy(update={"weight": 7.0}) if i == 0 else c
               for i, c in enumerate(CRITERIA)]
    changed[1] = changed[1].model_copy(update={"requirement": "Cites a peer-reviewed source"})
    v2 = rubrics.save_criteria(seeded.sessions, seeded.version.id, changed, actor=ADMIN)
    run = runs.create_run(seeded.sessions, rubric_version_id=v2.id,
                          dataset_id=seeded.responses[0].dataset_id, grader="per_criterion",
                          model="openai/judge-c", actor=ADMIN)
    for response in seeded.responses:
        runs.record_grade(seeded.sessions, run.id, response.id, judge_report(
            changed, [M, M, M, U], ScoringSettings(), response.output))
    return v2


def test_a_verdict_carried_from_an_earlier_version_says_which_on_review_and_results():
    seeded = seed_graded(count=2)
    r0 = seeded.responses[0]  # first in v2's queue (one run: no disagreements)
    for criterion in seeded.version.criteria[:2]:
        reviews.set_human_verdict(seeded.sessions, response_id=r0.id,
                                  criterion_id=criterion.id, verdict="UNMET",
                                  actor=local_actor("ana"))
    v2 = _second_version(seeded)

    at = _review("ana")  # the newest set first: Answers under v2
    assert at.session_state.review_set == (r0.dataset_id, v2.id)
    assert "**1 of 2** · r0" in texts(at)
    shown = texts(at)
    assert shown.count("carried from v1") == 1  # 'accurate' only: 'cites' was rewritten
    assert ":blue-badge[one reviewer] · carried from v1" in shown  # ana alone

    results = open_page("results")
    results.session_state["results_open_response"] = r0.id
    results.session_state["results_dialog_pending"] = True
    results.run()
    assert not results.exception, results.exception
    assert results.session_state.results_set == (r0.dataset_id, v2.id)
    assert texts(results).count("carried from v1") == 1


def test_a_new_versions_review_set_keeps_two_reviewers_and_says_where_from():
    seeded = seed_graded(count=2)
    review_sets.update_settings(seeded.sessions, actor=ADMIN,
                                dataset_id=seeded.responses[0].dataset_id,
                                rubric_version_id=seeded.version.id, reviewers_per_response=2)
    v2 = _second_version(seeded)
    at = _review("ana")  # the newest set first: Answers under v2
    assert at.session_state.review_set == (seeded.responses[0].dataset_id, v2.id)
    assert "Review set: 2 reviewers per response · 0 of 2 responses have them" in [
        e.label for e in at.expander]
    assert _number_input(at, "Reviewers per response").value == 2
    assert (f"Carried from v{seeded.version.number} of this rubric: nobody has set them on "
            "this version yet.") in texts(at)


def test_a_disputed_criterion_is_named_in_the_response_detail_on_results():
    seeded = seed_graded(count=3)
    rid, cites = seeded.responses[1].id, seeded.version.criteria[1]
    for who, verdict, note in (("ana", "MET", "in the footnote"), ("bo", "UNMET", "a blog")):
        reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=cites.id,
                                  verdict=verdict, note=note, actor=local_actor(who))
    at = open_page("results")
    at.session_state["results_open_response"] = rid
    at.session_state["results_dialog_pending"] = True
    at.run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert shown.count("disputed — the judge's verdict stands") == 1
    assert "ana: MET" in shown and "bo: UNMET" in shown
    assert "in the footnote" in shown and "a blog" in shown
    reviews.adjudicate(seeded.sessions, response_id=rid, criterion_id=cites.id,
                       verdict="UNMET", note="a blog is no source", actor=local_actor("cy"))
    time.sleep(2.1)  # verdicts from elsewhere show within 2 s (the results stamp's TTL)
    at.session_state["results_open_response"] = rid
    at.session_state["results_dialog_pending"] = True
    at.run()
    shown = texts(at)
    assert "disputed — the judge's verdict stands" not in shown
    assert "adjudicated" in shown and "a blog is no source" in shown


def _adjudicating_a_dispute():
    """Ana said MET and Bo UNMET on r1 · cites; Cy has the Adjudicate tab open on it."""
    seeded = seed_graded(count=3)
    rid, cites = seeded.responses[1].id, seeded.version.criteria[1]
    for who, verdict in (("ana", "MET"), ("bo", "UNMET")):
        reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=cites.id,
                                  verdict=verdict, actor=local_actor(who))
    at = _review("cy")
    at.session_state["review_mode"] = "Adjudicate"
    at.run()
    return seeded, rid, cites, at


def test_deciding_a_dispute_another_adjudicator_decided_meanwhile_says_so_and_writes_nothing():
    seeded, rid, cites, at = _adjudicating_a_dispute()
    assert "1 disputed criterion in this set" in texts(at)
    key = f"{rid}_{cites.id}"
    at.radio(key=f"review_adj_v_{key}").set_value("MET").run()
    # meanwhile, in another window
    reviews.adjudicate(seeded.sessions, response_id=rid, criterion_id=cites.id,
                       verdict="UNMET", actor=local_actor("eve"))
    time.sleep(2.1)  # verdicts from elsewhere show within 2 s
    at.button(key=f"review_adj_go_{key}").click().run()
    assert not at.exception, at.exception
    [warning] = at.warning
    assert warning.value.replace("\\", "") == (
        "Not saved: r1 · cites was decided meanwhile by eve (UNMET). Nothing was written.")
    adjudications = [h for h in reviews.verdict_history(seeded.sessions, rid)
                     if h.adjudication]
    assert [(h.reviewer, h.verdict.value) for h in adjudications] == [("eve", "UNMET")]


def test_deciding_after_a_reviewer_changed_their_answer_meanwhile_says_who_and_writes_nothing():
    seeded, rid, cites, at = _adjudicating_a_dispute()
    key = f"{rid}_{cites.id}"
    at.radio(key=f"review_adj_v_{key}").set_value("MET").run()
    # meanwhile bo, in another window, changes their answer: still a dispute, but not the
    # one the adjudicator is looking at
    reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=cites.id,
                              verdict="CANNOT_ASSESS", actor=local_actor("bo"))
    at.button(key=f"review_adj_go_{key}").click().run()
    assert not at.exception, at.exception
    shown = texts(at).replace("\\", "")
    assert "Not saved: bo answered CANNOT_ASSESS at" in shown
    assert "decide again. Nothing was written." in shown
    assert not [h for h in reviews.verdict_history(seeded.sessions, rid) if h.adjudication]


def test_the_adjudication_cards_are_the_first_page_of_disputes_and_a_decided_one_stays():
    seeded = seed_graded(count=12)
    criteria = seeded.version.criteria[:2]
    for response in seeded.responses:  # 24 disputes: more than one page of cards
        for criterion in criteria:
            for who, verdict in (("ana", "MET"), ("bo", "UNMET")):
                reviews.set_human_verdict(seeded.sessions, response_id=response.id,
                                          criterion_id=criterion.id, verdict=verdict,
                                          actor=local_actor(who))
    at = _review("cy")
    at.session_state["review_mode"] = "Adjudicate"
    at.run()
    assert not at.exception, at.exception

    def cards():
        return [r.key.removeprefix("review_adj_v_") for r in at.radio
                if r.key and r.key.startswith("review_adj_v_")]

    first = [f"{r.id}_{c.id}" for r in seeded.responses for c in criteria][:20]
    assert cards() == first
    assert "24 disputed criteria in this set" in texts(at)
    assert "\n4 more after these; they move up as you decide." in texts(at)
    at.radio(key=f"review_adj_v_{first[0]}").set_value("MET").run()
    at.button(key=f"review_adj_go_{first[0]}").click().run()
    assert not at.exception, at.exception
    # the decided card stays where it was; the next dispute joins the page at the end
    nxt = f"{seeded.responses[10].id}_{criteria[0].id}"
    assert cards() == [*first, nxt]
    assert "23 disputed criteria in this set" in texts(at)
    assert "\n3 more after these; they move up as you decide." in texts(at)
