"""AppTest checks of the Review page: queue order, saving, blind mode, history, stale forms."""

from __future__ import annotations

import json

import pytest

from storage.services import reviews, save_retry
from storage.services.reviewers import local_actor
from tests.ui import verdict_form
from tests.ui.pages import open_page, texts, unescape
from tests.ui.seed import seed_graded


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _review(name: str = "ana"):
    at = open_page("review")
    if name:
        at.text_input(key="review_name_input").input(name).run()
    return at


def _cid(seeded, criterion: int) -> int:
    return seeded.version.criteria[criterion].id


def _shown(at, seeded, criterion: int) -> str | None:
    """The verdict the form shows for a criterion (by index)."""
    return verdict_form.answer(at, _cid(seeded, criterion))


def _save(at, seeded, answers: dict[int, str | tuple[str, str]], *, advance: bool = False):
    """Give verdicts (criterion index -> verdict or (verdict, note)) and save, as the form
    in the browser sends them."""
    return verdict_form.submit(at, {_cid(seeded, i): v for i, v in answers.items()},
                               advance=advance)


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
    _save(at, seeded, {1: "UNMET"})
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
    assert _shown(at, seeded, 1) == "UNMET"  # the form shows the saved verdict


def test_save_and_next_moves_on_and_a_note_is_kept():
    seeded = seed_graded(count=3)
    at = _review()
    response_id = seeded_response_id(at)
    _save(at, seeded, {0: ("MET", "dose checked")}, advance=True)
    assert "**2 of 3**" in texts(at)
    [saved] = reviews.verdict_history(seeded.sessions, response_id)
    assert saved.note == "dose checked"


def test_without_a_typed_name_verdicts_are_recorded_under_the_login_name():
    from ui.auth import computer_login

    seeded = seed_graded(count=3)
    at = _review(name="")
    _save(at, seeded, {1: "MET"})
    [saved] = reviews.verdict_history(seeded.sessions, seeded.responses[1].id)
    assert saved.reviewer == computer_login()


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
    _save(at, seeded, {1: "MET"})
    shown = texts(at)
    assert shown.count("Judges hidden until you answer") == 3
    assert "reason 1" in shown  # the answered criterion now shows both judges


def test_history_shows_who_changed_what_from_what_to_what_and_why():
    seeded = seed_graded(count=3)
    rid, cid = seeded.responses[1].id, seeded.version.criteria[1].id
    reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=cid,
                              verdict="MET", actor=local_actor("ana"), note="source in footnote")
    reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=cid,
                              verdict="UNMET", actor=local_actor("bo"), note="it is a blog")
    at = _review("bo")
    shown = texts(at)
    assert "History (2)" in [p.proto.popover.label for p in at.get("popover")]
    newest = shown.index("**bo** ·")
    assert newest < shown.index("**ana** ·")
    assert "cites: the judge's verdict → **UNMET**" in shown  # bo's first verdict
    assert "cites: the judge's verdict → **MET**" in shown
    assert "“it is a blog”" in shown and "“source in footnote”" in shown


def test_a_stale_form_is_refused_and_shows_the_verdict_saved_in_another_window():
    seeded = seed_graded(count=3)
    at = _review()
    rid, cid = seeded.responses[1].id, seeded.version.criteria[1].id
    # The same reviewer decides in another window while this form is open.
    reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=cid,
                              verdict="UNMET", actor=local_actor("ana"))
    _save(at, seeded, {1: "MET"})
    assert not at.exception
    [error] = at.error
    assert "you changed them in another window" in error.value
    assert "ana changed this verdict" in error.value
    [current] = reviews.current_verdicts(seeded.sessions, rid, seeded.version.id).values()
    assert (current.verdict.value, current.reviewer) == ("UNMET", "ana")
    assert _shown(at, seeded, 1) == "UNMET"  # the form now shows the saved verdict


def test_other_reviewers_are_hidden_until_this_reviewer_saved():
    seeded = seed_graded(count=3)
    rid, cid = seeded.responses[1].id, seeded.version.criteria[1].id
    reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=cid,
                              verdict="UNMET", actor=local_actor("bo"), note="a blog")
    at = _review("ana")
    shown = texts(at)
    assert shown.count("Other reviewers' verdicts are hidden until you save yours") == 1
    assert "a blog" not in shown and "bo: UNMET" not in shown
    assert not at.metric  # scores would tell what bo said
    _save(at, seeded, {1: "MET"})
    shown = texts(at)
    assert "Other reviewers' verdicts are hidden" not in shown
    assert "bo: UNMET" in shown and "a blog" in shown
    assert "disputed — the judge's verdict stands" in shown


# The keys themselves (M / U / N, J / K, Shift+A, Ctrl+Enter) run in the browser: see
# tests/e2e/test_review_keys.py. Here: what the browser form is given and what it sends.
def test_the_form_gives_every_criterion_its_answers_and_keys():
    seeded = seed_graded(count=3)
    at = _review()
    data = verdict_form.form(at)
    assert data["form"] == f"{seeded_response_id(at)}:0"
    assert [c["label"] for c in data["criteria"]] == [c.label for c in seeded.version.criteria]
    for criterion in data["criteria"]:
        assert [(a["value"], a["key"]) for a in criterion["answers"]] == [
            ("MET", "m"), ("UNMET", "u"), ("CANNOT_ASSESS", "n")]
    # one keys part, one part per criterion (inside its box), one save part
    assert [p["part"] for p in verdict_form.parts(at)] == (
        ["keys"] + ["criterion"] * 4 + ["save"])


def test_accept_the_judges_is_given_only_where_they_agree_and_not_in_blind_mode():
    seed_graded(count=3)
    at = _review()  # r1: the judges disagree on 'cites' only
    assert [c["agreed"] for c in verdict_form.form(at)["criteria"]] == [
        "MET", None, "MET", "UNMET"]
    at.toggle(key="review_blind").set_value(True).run()
    assert [c["agreed"] for c in verdict_form.form(at)["criteria"]] == [None] * 4


def test_the_browser_form_is_told_its_save_was_taken():
    seeded = seed_graded(count=3)
    at = _review()
    _save(at, seeded, {1: "UNMET"})
    taken = at.session_state.review_form_done
    assert taken and verdict_form.form(at)["done"] == taken
    assert verdict_form.form(at)["form"] == f"{seeded_response_id(at)}:1"  # a fresh form


def test_a_save_the_browser_sends_again_is_taken_once():
    seeded = seed_graded(count=3)
    at = _review()
    rid = seeded_response_id(at)
    _save(at, seeded, {1: "UNMET"})
    [first] = reviews.verdict_history(seeded.sessions, rid)
    again = at.session_state.review_form_done
    # the browser did not hear in time that it was taken, and sends the same save again
    at.session_state["review_submitted"] = {
        "id": again, "form": f"{rid}:0", "advance": False,
        "answers": [{"criterion": _cid(seeded, 1), "answer": "UNMET", "note": "again"}]}
    at.run()
    assert not at.exception and not at.error
    assert reviews.verdict_history(seeded.sessions, rid) == [first]
    assert verdict_form.form(at)["done"] == again


def test_a_save_from_a_replaced_form_is_refused_and_nothing_is_written():
    seeded = seed_graded(count=3)
    at = _review()
    rid = seeded_response_id(at)
    _save(at, seeded, {1: "UNMET"})  # the form is now rid:1
    at.session_state["review_submitted"] = {
        "id": "old#1", "form": f"{rid}:0", "advance": False,
        "answers": [{"criterion": _cid(seeded, 0), "answer": "MET", "note": ""}]}
    at.run()
    assert not at.exception
    [error] = at.error
    assert "this form was replaced" in error.value
    assert [h.criterion_id for h in reviews.verdict_history(seeded.sessions, rid)] == [
        _cid(seeded, 1)]
    assert verdict_form.form(at)["done"] == "old#1"  # the browser's form unlocks


@pytest.mark.parametrize("answer", [
    pytest.param({"criterion": 999_999, "answer": "MET", "note": ""}, id="unknown-criterion"),
    pytest.param({"criterion": None, "answer": "MAYBE", "note": ""}, id="unknown-answer"),
    pytest.param({"criterion": None, "answer": "MET", "note": 7}, id="note-not-text"),
])
def test_a_malformed_save_says_what_is_wrong_and_writes_nothing(answer):
    seeded = seed_graded(count=3)
    at = _review()
    rid = seeded_response_id(at)
    if answer["criterion"] is None:
        answer = {**answer, "criterion": _cid(seeded, 0)}
    at.session_state["review_submitted"] = {
        "id": "x#1", "form": f"{rid}:0", "advance": True, "answers": [answer]}
    at.run()
    assert not at.exception
    [error] = at.error
    assert unescape(error.value).startswith("Not saved:")
    assert seeded_response_id(at) == rid  # did not move on
    assert not reviews.verdict_history(seeded.sessions, rid)


def test_an_error_is_shown_under_the_save_button_not_at_the_top():
    seeded = seed_graded(count=3)
    at = _review()
    rid, cid = seeded.responses[1].id, seeded.version.criteria[1].id
    reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=cid,
                              verdict="UNMET", actor=local_actor("ana"))  # another window
    _save(at, seeded, {1: "MET"})
    [error] = at.error
    assert "you changed them in another window" in error.value
    # drawn right after the form's save buttons, not at the top of the page
    order = [(e.type, _part(e) or getattr(e, "value", None)) for e in _in_order(at.main)]
    save = order.index(("bidi_component", "save"))
    assert order.index(("error", error.value)) > save
    assert not [kind for kind, _ in order[:save] if kind == "error"]


def _part(element) -> str | None:
    if element.type != "bidi_component":
        return None
    proto = element.proto
    raw = proto.mixed.json if proto.WhichOneof("data") == "mixed" else proto.json
    return json.loads(raw).get("part")


def _in_order(block) -> list:
    found = []
    for child in getattr(block, "children", {}).values():
        if getattr(child, "children", None):
            found.extend(_in_order(child))
        else:
            found.append(child)
    return found


def test_only_still_to_review_leaves_out_fully_reviewed_responses():
    seeded = seed_graded(count=3)
    for criterion in seeded.version.criteria:
        reviews.set_human_verdict(seeded.sessions, response_id=seeded.responses[1].id,
                                  criterion_id=criterion.id, verdict="MET",
                                  actor=local_actor("bo"))
    at = _review()
    assert "**3 of 3** · r1" not in texts(at)
    assert "**1 of 3** · r2" in texts(at)
    at.toggle(key="review_unreviewed_only").set_value(True).run()
    assert "**1 of 2** · r2" in texts(at)


def test_save_and_next_refused_as_stale_comes_back_with_the_message_and_saves_the_rest():
    seeded = seed_graded(count=3)
    at = _review()
    rid = seeded_response_id(at)
    first, second = (c.id for c in seeded.version.criteria[:2])
    # the same reviewer decides 'cites' in another window while this form is open
    reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=second,
                              verdict="UNMET", actor=local_actor("ana"))
    _save(at, seeded, {0: "MET", 1: "MET"}, advance=True)
    assert not at.exception
    assert "**1 of 3**" in texts(at) and seeded_response_id(at) == rid  # came back
    [error] = at.error
    assert "you changed them in another window" in error.value
    assert "Saved: " in error.value
    current = reviews.current_verdicts(seeded.sessions, rid, seeded.version.id)
    assert {cid: h.verdict.value for cid, h in current.items()} == {
        first: "MET", second: "UNMET"}
    assert _shown(at, seeded, 0) == "MET" and _shown(at, seeded, 1) == "UNMET"


def test_save_and_next_refused_keeps_the_reviewers_choices_in_the_form():
    seeded = seed_graded(count=3)
    at = _review()
    rid = seeded_response_id(at)
    _save(at, seeded, {0: ("MET", "bad\x00note")}, advance=True)
    assert not at.exception
    assert seeded_response_id(at) == rid  # back on the response that was not saved
    [error] = at.error
    assert "note" in error.value
    assert _shown(at, seeded, 0) == "MET"
    assert not reviews.verdict_history(seeded.sessions, rid)


def test_a_save_and_next_cut_short_before_its_write_is_written_on_the_next_run():
    from ui.review_form import Due

    seeded = seed_graded(count=3)
    at = _review()
    rid = seeded_response_id(at)
    cid = seeded.version.criteria[2].id
    # what "save and next" leaves behind when a whole-page rerun cuts its run short
    at.session_state["review_due"] = Due(
        response_id=rid, wanted={cid: ("UNMET", "late")}, expected={cid: None},
        labels={cid: "c"}, opened=0.0, advance=True, position=0, nonce=0)
    at.run()
    assert not at.exception
    [saved] = reviews.verdict_history(seeded.sessions, rid)
    assert (saved.criterion_id, saved.verdict.value, saved.note) == (cid, "UNMET", "late")
    assert at.session_state.review_due is None


def test_two_people_taking_turns_on_one_computer_are_two_reviewers():
    seeded = seed_graded(count=3)
    at = _review("ana")
    rid = seeded_response_id(at)
    cid = seeded.version.criteria[1].id
    _save(at, seeded, {1: "MET"})
    at.text_input(key="review_name_input").input("bo").run()  # the switch in the sidebar
    assert at.session_state.reviewer_name == "bo"
    assert seeded_response_id(at) == rid
    shown = texts(at)
    assert "Other reviewers' verdicts are hidden until you save yours" in shown
    assert _shown(at, seeded, 1) is None  # bo's own form: ana's verdict is not in it
    _save(at, seeded, {1: "UNMET"})
    history = reviews.verdict_history(seeded.sessions, rid, criterion_id=cid)
    assert sorted((h.reviewer, h.verdict.value) for h in history) == [
        ("ana", "MET"), ("bo", "UNMET")]
    assert "disputed — the judge's verdict stands" in texts(at)  # two reviewers, not one


def test_save_and_next_on_the_last_response_says_the_queue_is_done_and_what_is_next():
    """It saved, but nothing changed on screen: no message, the counts of before."""
    seeded = seed_graded(count=3)
    at = _review()
    at.button(key="review_next").click().run()
    at.button(key="review_next").click().run()
    assert "**3 of 3**" in texts(at)
    _save(at, seeded, dict.fromkeys(range(len(seeded.version.criteria)), "MET"), advance=True)
    assert not at.exception, at.exception
    shown = texts(at)
    assert ("End of the queue: you have answered every criterion of 1 of 3 responses in "
            "this set. 2 still need your verdicts") in shown
    assert [h.verdict.value for h in reviews.verdict_history(
        seeded.sessions, seeded_response_id(at))] == ["MET"] * len(seeded.version.criteria)
    labels = [b.label for b in at.button]
    assert "Adjudication queue (0 disputed)" in labels
    assert any(link.label == "Agreement: judges against people" for link in at.get("page_link"))
    at.button(key="review_done_adjudicate").click().run()
    assert not at.exception, at.exception
    assert at.session_state.review_mode == "Adjudicate"
    assert "Nothing to adjudicate" in texts(at)


def test_a_save_the_database_cannot_take_is_one_sentence_under_the_form(tmp_path, monkeypatch):
    """Issue 40 item 12: another program holding SQLite's write lock past the save's retries
    (as a PostgreSQL server that stays away) was a traceback on the page; now it is the
    storage error's sentence, the choices stay in the form and nothing is written."""
    import sqlite3

    from storage import engine as engine_module

    monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 200)
    monkeypatch.setattr(save_retry, "SAVE_DEADLINE_S", 1.0)
    seeded = seed_graded(count=3)
    at = _review()
    rid = seeded_response_id(at)
    holder = sqlite3.connect(tmp_path / "workbench.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        _save(at, seeded, {1: "MET"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert not at.exception
    [error] = at.error
    assert "too busy to save" in error.value and "nothing was saved" in error.value
    assert "Traceback" not in error.value and "sqlite" not in error.value.lower()
    assert reviews.current_verdicts(seeded.sessions, rid, seeded.version.id,
                                    reviewer_key="ana") == {}


def test_the_reference_answer_is_shown_under_the_response_when_there_is_one():
    seeded = seed_graded(references={1: "five mg, twice a day"})
    at = _review()
    codes = lambda: [c.value for c in at.code]  # noqa: E731 - response texts are code blocks
    shown = next(r for r in seeded.responses if r.id == seeded_response_id(at))
    while shown.external_id != "r1":
        at.button(key="review_next").click().run()
        shown = next(r for r in seeded.responses if r.id == seeded_response_id(at))
    assert "**Reference answer** (shown to the judge to compare with)" in texts(at)
    assert "five mg, twice a day" in codes()
    at.button(key="review_next").click().run()  # a response without one: no heading
    assert "Reference answer" not in texts(at)
