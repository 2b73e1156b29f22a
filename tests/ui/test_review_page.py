"""AppTest checks of the Review page: queue order, saving, blind mode, history, stale forms."""

from __future__ import annotations

import pytest

from storage.services import reviews
from tests.ui.pages import open_page, texts
from tests.ui.seed import seed_graded


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _review(name: str = "ana"):
    at = open_page("review")
    if name:
        at.text_input(key="review_name_input").input(name).run()
    return at


def _verdict(at, seeded, criterion: int):
    response_id = seeded_response_id(at)
    cid = seeded.version.criteria[criterion].id
    return at.radio(key=f"review_v_{response_id}_{cid}_{at.session_state.review_form_nonce}")


def seeded_response_id(at) -> int:
    return at.session_state.review_shown[0]


def _scores(at) -> dict[str, str]:
    return {metric.label: metric.value for metric in at.metric}


RUN_A, RUN_B = "#1 Per criterion", "#2 One-shot"


def test_nothing_graded_points_to_the_grade_page():
    at = open_page("review")
    assert "Nothing to review yet — go to Grade" in texts(at)


def test_queue_puts_disagreements_then_failures_first_and_moves_with_next():
    seeded = seed_graded(count=3)
    at = _review()
    assert "**1 of 3** · r1 · judges disagree · 0/4 criteria reviewed" in texts(at)
    at.button(key="review_next").click().run()
    assert "**2 of 3** · r2 · judge failed or fell back" in texts(at)
    at.button(key="review_prev").click().run()
    assert seeded_response_id(at) == seeded.responses[1].id
    assert at.button(key="review_prev").disabled


def test_saving_a_verdict_changes_the_effective_score_at_once():
    seeded = seed_graded(count=3)
    at = _review()
    scores = _scores(at)
    assert (scores[RUN_A], scores[RUN_B]) == ("1.000", "0.714")
    _verdict(at, seeded, 1).set_value("UNMET")
    at.button[-2].click().run()  # Save (the form's first submit button)
    assert not at.exception
    assert "Saved 1 verdict (cites); effective scores are updated." in texts(at)
    scores = _scores(at)
    assert (scores[RUN_A], scores[RUN_B]) == ("0.714", "0.714")
    assert "openai/judge-a · judge 1.000 · reviewed 1/4" in texts(at)
    [moved] = [m for m in at.metric if m.label == RUN_A]
    assert moved.proto.delta == "-0.286 by review"
    [current] = reviews.current_verdicts(seeded.sessions, seeded.responses[1].id,
                                         seeded.version.id).values()
    assert (current.verdict.value, current.reviewer) == ("UNMET", "ana")
    assert _verdict(at, seeded, 1).value == "UNMET"  # the form shows the saved verdict


def test_save_and_next_moves_on_and_a_note_is_kept():
    seeded = seed_graded(count=3)
    at = _review()
    _verdict(at, seeded, 0).set_value("MET")
    response_id = seeded_response_id(at)
    cid = seeded.version.criteria[0].id
    at.text_input(key=f"review_n_{response_id}_{cid}_0").input("dose checked")
    at.button[-1].click().run()  # Save and next
    assert "**2 of 3**" in texts(at)
    [saved] = reviews.verdict_history(seeded.sessions, response_id)
    assert saved.note == "dose checked"


def test_without_a_reviewer_name_nothing_is_saved():
    seeded = seed_graded(count=3)
    at = _review(name="")
    _verdict(at, seeded, 1).set_value("MET")
    at.button[-2].click().run()
    assert "Enter your name in the sidebar" in texts(at)
    assert reviews.verdict_history(seeded.sessions, seeded.responses[1].id) == []


def test_the_reviewer_name_is_kept_across_pages():
    seed_graded(count=3)
    at = _review("bo")
    at.switch_page("app_pages/results.py").run()
    at.switch_page("app_pages/review.py").run()
    assert at.session_state.reviewer_name == "bo"
    assert at.text_input(key="review_name_input").value == "bo"


def test_blind_mode_hides_the_judges_until_the_reviewer_answered():
    seeded = seed_graded(count=3)
    at = _review()
    at.toggle(key="review_blind").set_value(True).run()
    shown = texts(at)
    assert shown.count("Judges hidden until you answer") == 4
    assert "reason 1" not in shown and "judges disagree" not in shown
    assert not at.metric  # no scores either
    _verdict(at, seeded, 1).set_value("MET")
    at.button[-2].click().run()
    shown = texts(at)
    assert shown.count("Judges hidden until you answer") == 3
    assert "reason 1" in shown  # the answered criterion now shows both judges


def test_history_shows_who_changed_what_from_what_to_what_and_why():
    seeded = seed_graded(count=3)
    rid, cid = seeded.responses[1].id, seeded.version.criteria[1].id
    reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=cid,
                              verdict="MET", reviewer="bo", note="source in footnote")
    reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=cid,
                              verdict="UNMET", reviewer="cy", note="it is a blog")
    at = _review()
    shown = texts(at)
    assert "History (2)" in [p.proto.popover.label for p in at.get("popover")]
    newest = shown.index("**cy** ·")
    assert newest < shown.index("**bo** ·")
    assert "cites: MET → **UNMET**" in shown
    assert "cites: the judge's verdict → **MET**" in shown
    assert "“it is a blog”" in shown and "“source in footnote”" in shown


def test_a_stale_form_is_refused_and_shows_the_other_reviewers_verdict():
    seeded = seed_graded(count=3)
    at = _review()
    rid, cid = seeded.responses[1].id, seeded.version.criteria[1].id
    # Someone else decides while this form is open.
    reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=cid,
                              verdict="UNMET", reviewer="bo")
    _verdict(at, seeded, 1).set_value("MET")
    at.button[-2].click().run()
    assert not at.exception
    [error] = at.error
    assert "someone else changed them" in error.value and "bo changed this verdict" in (
        error.value)
    [current] = reviews.current_verdicts(seeded.sessions, rid, seeded.version.id).values()
    assert (current.verdict.value, current.reviewer) == ("UNMET", "bo")
    assert _verdict(at, seeded, 1).value == "UNMET"  # the form now shows bo's verdict


def test_only_still_to_review_leaves_out_fully_reviewed_responses():
    seeded = seed_graded(count=3)
    for criterion in seeded.version.criteria:
        reviews.set_human_verdict(seeded.sessions, response_id=seeded.responses[1].id,
                                  criterion_id=criterion.id, verdict="MET", reviewer="bo")
    at = _review()
    assert "**3 of 3** · r1" not in texts(at)
    assert "**1 of 3** · r2" in texts(at)
    at.toggle(key="review_unreviewed_only").set_value(True).run()
    assert "**1 of 2** · r2" in texts(at)
