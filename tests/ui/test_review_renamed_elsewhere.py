"""AppTest checks of the Review page when the local name is changed in another tab while this
tab's browser is still catching up: what it sent before it heard back renames nobody, replaces
no form, and a save it sends again keeps its answer on screen."""

from __future__ import annotations

import pytest

from storage.local_identity import remember_name, remembered_name
from storage.services import reviews
from tests.ui import verdict_form
from tests.ui.pages import open_page, texts
from tests.ui.seed import seed_graded

REFUSED = "Not saved: this page showed you as 'Bo Chen', but you now act as 'Cy Park'"


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _bo_reviewing():
    seeded = seed_graded(count=3)
    at = open_page("review")
    at.text_input(key="review_name_input").input("Bo Chen").run()
    return seeded, at


def test_a_message_sent_before_the_rename_reached_the_tab_keeps_the_new_name_and_its_form():
    seeded, at = _bo_reviewing()
    sidebar_for_bo = at.text_input(key="review_name_input")  # as the browser still has it
    remember_name("Cy Park")  # another tab
    at.run()  # this tab follows: Cy Park's own form
    cy_form = verdict_form.form(at)
    assert cy_form["saving_as"] == "Cy Park"
    # A click, a save sent again or the set panel's poll, sent by the browser before that
    # run reached it: the sidebar's box in it still holds "Bo Chen".
    sidebar_for_bo.set_value("Bo Chen").run()
    assert not at.exception
    assert remembered_name() == "Cy Park"
    assert verdict_form.form(at)["form"] == cy_form["form"]  # what was clicked in it stays
    assert verdict_form.form(at)["saving_as"] == "Cy Park"
    cid = seeded.version.criteria[0].id
    verdict_form.submit(at, {cid: "MET"})
    rid = at.session_state.review_shown[0]
    assert [h.reviewer for h in reviews.verdict_history(seeded.sessions, rid)] == ["Cy Park"]


def test_a_refused_save_the_browser_sends_again_keeps_saying_why():
    """The browser sends a save again when it has not heard back in 3 s (a busy machine);
    Python takes it once, and the rerun that answers it shows the same answer, not a page
    without it (the reviewer would think it was saved)."""
    seeded, at = _bo_reviewing()
    rid = at.session_state.review_shown[0]
    drawn = verdict_form.form(at)
    remember_name("Cy Park")  # another tab
    save = {"id": f"{drawn['form']}#1", "form": drawn["form"], "advance": False,
            "answers": [{"criterion": seeded.version.criteria[0].id, "answer": "UNMET",
                         "note": ""}]}
    # as handle_submit records it: the form was drawn for Bo Chen
    at.session_state["review_pending_as"] = "Bo Chen"
    at.session_state["review_submitted"] = save
    at.run()
    assert REFUSED in texts(at)
    at.session_state["review_submitted"] = dict(save)  # the same save, sent again
    at.run()
    assert not at.exception
    assert REFUSED in texts(at)
    assert reviews.verdict_history(seeded.sessions, rid) == []


def test_a_save_the_browser_sends_again_keeps_its_saved_message():
    seeded, at = _bo_reviewing()
    rid = at.session_state.review_shown[0]
    verdict_form.submit(at, {seeded.version.criteria[0].id: "UNMET"})
    assert "Saved 1 verdict" in texts(at)
    again = at.session_state.review_form_done
    at.session_state["review_submitted"] = {
        "id": again, "form": f"{rid}:0", "advance": False,
        "answers": [{"criterion": seeded.version.criteria[0].id, "answer": "UNMET",
                     "note": ""}]}
    at.run()
    assert "Saved 1 verdict" in texts(at)
    assert len(reviews.verdict_history(seeded.sessions, rid)) == 1
    at.run()  # anything else the reviewer does next: the message has been given
    assert "Saved 1 verdict" not in texts(at)
