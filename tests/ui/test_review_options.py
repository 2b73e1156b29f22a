"""The Review page on multi-choice criteria (issue 34): the form offers the options by number
keys, a save stores the chosen label through the review services, the judges' and other
reviewers' choices show as labels, and a dispute over options is adjudicated by an option.
The keys themselves in a real browser: tests/e2e/test_review_options.py."""

from __future__ import annotations

import time

import pytest

from grading.types import EvaluationReport
from storage.config import database_url
from storage.engine import open_database
from storage.services import datasets, reviews, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import MIXED, judge_report
from tests.storage.helpers import make_rubric
from tests.ui import verdict_form
from tests.ui.pages import texts
from tests.ui.test_review_page import _review

CRITERIA = MIXED


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _report(choices: list[str]) -> EvaluationReport:
    return judge_report(choices, reason="judged", score=0.5)


def _seed():
    """One response, two runs: they agree on 'accurate' and 'tone', differ on 'clarity'."""
    sessions = open_database(database_url())
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": "r0", "query": "question", "text": "answer"}], actor=ADMIN)
    [response] = datasets.list_responses(sessions, dataset.id, limit=None)
    for model, choices in (("openai/judge-a", ["MET", "Fair", "formal"]),
                           ("openai/judge-b", ["MET", "Very good", "formal"])):
        run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                              grader="per_criterion", model=model, actor=ADMIN)
        runs.record_grade(sessions, run.id, response.id, _report(choices))
    ids = {c.name: c.id for c in version.criteria}
    return sessions, response.id, ids


def _mine(sessions, response_id: int, who: str = "ana") -> dict[int, list[tuple]]:
    stored: dict[int, list[tuple]] = {}
    for h in reviews.verdict_history(sessions, response_id):
        if h.reviewer == who and not h.adjudication:
            stored.setdefault(h.criterion_id, []).append((h.verdict.value, h.option))
    return stored


def test_a_multi_choice_criterion_offers_its_options_by_number_keys_with_na_marked():
    _sessions, _rid, ids = _seed()
    at = _review()
    by_id = {c["id"]: c for c in verdict_form.form(at)["criteria"]}
    assert [(a["value"], a["key"]) for a in by_id[ids["accurate"]]["answers"]] == [
        ("MET", "m"), ("UNMET", "u"), ("CANNOT_ASSESS", "n")]
    # no NA option: CANNOT ASSESS (N) stays, as the services take it
    assert [(a["value"], a["label"], a["key"], a["na"])
            for a in by_id[ids["clarity"]]["answers"]] == [
        ("Poor", "Poor · 0", "1", False), ("Fair", "Fair · 0.25", "2", False),
        ("Good", "Good · 0.5", "3", False), ("Very good", "Very good · 0.75", "4", False),
        ("Excellent", "Excellent · 1", "5", False),
        ("CANNOT_ASSESS", "CANNOT ASSESS", "n", False)]
    assert [(a["value"], a["label"], a["key"], a["na"])
            for a in by_id[ids["tone"]]["answers"]] == [
        ("formal", "formal · 1", "1", False), ("casual", "casual · 0.5", "2", False),
        ("no text", "no text · NA", "3", True)]
    # "accept the judges" offers the option they all chose, none where they differ
    assert [by_id[ids[n]]["agreed"] for n in ("accurate", "clarity", "tone")] == [
        "MET", None, "formal"]
    # the judges' choices are shown as labels
    shown = texts(at)
    assert ":blue-badge[Fair]" in shown and ":blue-badge[Very good]" in shown


def test_a_chosen_option_is_saved_as_its_label_and_the_form_starts_from_it():
    sessions, rid, ids = _seed()
    at = _review()
    verdict_form.submit(at, {ids["accurate"]: "MET", ids["clarity"]: ("Good", "clear enough"),
                             ids["tone"]: "no text"})
    assert not at.exception, at.exception
    assert "Saved 3 verdicts" in texts(at)
    assert _mine(sessions, rid) == {ids["accurate"]: [("MET", None)],
                                    ids["clarity"]: [("MET", "Good")],
                                    ids["tone"]: [("CANNOT_ASSESS", "no text")]}
    # the next drawing of the form starts from the saved labels (a reload does the same)
    assert verdict_form.answer(at, ids["clarity"]) == "Good"
    assert verdict_form.answer(at, ids["tone"]) == "no text"
    assert "Yours: Good" in texts(at)
    # saving the same form again writes nothing: the label compares equal to what is saved
    verdict_form.submit(at, {})
    assert "Nothing changed" in texts(at)
    assert len(_mine(sessions, rid)[ids["clarity"]]) == 1
    # a fresh page (a reload, or a second tab) starts from what is stored
    again = _review()
    assert verdict_form.answer(again, ids["clarity"]) == "Good"
    verdict_form.submit(again, {ids["clarity"]: "Excellent"})
    assert _mine(sessions, rid)[ids["clarity"]] == [("MET", "Good"), ("MET", "Excellent")]


def test_an_answer_that_is_not_an_option_of_the_criterion_is_refused_and_nothing_is_written():
    sessions, rid, ids = _seed()
    at = _review()
    verdict_form.submit(at, {ids["clarity"]: "formal"})  # an option of another criterion
    assert not at.exception, at.exception
    assert "'formal' is not an answer of criterion “clarity”" in texts(at)
    verdict_form.submit(at, {ids["tone"]: "MET"})  # a binary verdict on a multi-choice one
    assert "'MET' is not an answer of criterion “tone”" in texts(at)
    assert _mine(sessions, rid) == {}


def test_blind_mode_hides_the_judges_options_until_the_reviewer_answered():
    _sessions, _rid, ids = _seed()
    at = _review()
    at.toggle(key="review_blind").set_value(True).run()
    assert all(c["agreed"] is None for c in verdict_form.form(at)["criteria"])
    assert ":blue-badge[Fair]" not in texts(at)
    verdict_form.submit(at, {ids["clarity"]: "Poor"})
    assert ":blue-badge[Fair]" in texts(at)  # answered: its judges are shown


def test_two_reviewers_choosing_different_options_are_a_dispute_decided_by_an_option():
    sessions, rid, ids = _seed()
    reviews.set_human_verdict(sessions, response_id=rid, criterion_id=ids["clarity"],
                              verdict="Fair", actor=local_actor("bo"), note="wordy")
    at = _review("ana")
    assert "bo: Fair" not in texts(at)  # hidden until ana saved hers
    verdict_form.submit(at, {ids["clarity"]: "Excellent"})
    shown = texts(at)
    assert "bo: Fair" in shown and "wordy" in shown
    assert "disputed — the judge's verdict stands" in shown

    at = _review("cy")
    at.session_state["review_mode"] = "Adjudicate"
    at.run()
    assert not at.exception, at.exception
    assert "1 disputed criterion in this set" in texts(at)
    key = f"{rid}_{ids['clarity']}"
    radio = at.radio(key=f"review_adj_v_{key}")
    assert radio.label == "Adjudicated option"
    assert list(radio.options) == ["Poor · 0", "Fair · 0.25", "Good · 0.5",
                                   "Very good · 0.75", "Excellent · 1", "CANNOT ASSESS"]
    shown = texts(at)
    assert ":blue-badge[Fair] :small[bo: Fair" in shown
    assert ":blue-badge[Excellent] :small[ana: Excellent" in shown
    radio.set_value("Very good").run()
    at.text_input(key=f"review_adj_n_{key}").input("clear, a little long").run()
    at.button(key=f"review_adj_go_{key}").click().run()
    assert not at.exception, at.exception
    [decided] = [h for h in reviews.verdict_history(sessions, rid) if h.adjudication]
    assert (decided.reviewer, decided.verdict.value, decided.option, decided.note) == (
        "cy", "MET", "Very good", "clear, a little long")
    time.sleep(2.1)  # verdicts from elsewhere show within 2 s
    at.run()
    assert "Nothing to adjudicate" in texts(at)
    assert ":blue-badge[Very good] :small[decided by cy" in texts(at)
