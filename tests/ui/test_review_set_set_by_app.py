"""AppTest: the Review page moves itself to another review set ("Next review set", "switch to
the newer version") while the browser still holds the picker it drew before. What the browser
sends before it hears back (a click, a save sent again, the set panel's 5 s poll) carries the
old set in the old picker. Unlike the sidebar's name box (tests/ui/test_review_renamed_
elsewhere.py), Streamlit does not take it as the person picking the old set again: the value
is the one the browser last sent, not a change. These tests keep it so (checked in session 35
because the name box's defect looked like it could happen here too).
"""

from __future__ import annotations

import pytest

from storage.services import datasets, runs
from tests.actors import ADMIN
from tests.ui import verdict_form
from tests.ui.pages import open_page
from tests.ui.seed import seed_graded
from tests.ui.test_review_version_moved import _reword_cites


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _set_picker(at):
    [picker] = [box for box in at.selectbox if box.label == "Review set"]
    return picker


def test_a_message_sent_before_the_switch_reached_the_browser_keeps_the_new_set():
    seeded = seed_graded(count=3)
    at = open_page("review")
    at.text_input(key="review_name_input").input("ana").run()
    newer = _reword_cites(seeded)
    runs.create_run(seeded.sessions, rubric_version_id=newer.id,
                    dataset_id=seeded.responses[0].dataset_id, grader="per_criterion",
                    model="openai/judge-a", actor=ADMIN)
    verdict_form.submit(at, {seeded.version.criteria[1].id: "UNMET"})
    before = _set_picker(at)  # as the browser still has it
    shown = before.value
    assert shown[1] == seeded.version.id
    at.button(key="review_version_switch").click().run()
    assert at.session_state.review_set[1] == newer.id
    # the poll (or any message) the browser sent before that run reached it
    before.set_value(shown).run()
    assert not at.exception
    assert at.session_state.review_set[1] == newer.id
    assert _set_picker(at).value[1] == newer.id
    # the person picking the old set in the picker now is a pick, and is taken
    _set_picker(at).select((seeded.responses[0].dataset_id, seeded.version.id)).run()
    assert at.session_state.review_set[1] == seeded.version.id
    assert at.session_state.review_position == 0


def test_next_review_set_is_not_undone_by_the_poll_the_browser_sent_before():
    seeded = seed_graded(count=1)
    other = datasets.create_dataset(seeded.sessions, "More answers", actor=ADMIN, responses=[
        {"id": "m0", "query": "question m0", "text": "answer m0"}])
    runs.create_run(seeded.sessions, rubric_version_id=seeded.version.id, dataset_id=other.id,
                    grader="per_criterion", model="openai/judge-a", actor=ADMIN)
    at = open_page("review")
    at.text_input(key="review_name_input").input("ana").run()
    first = at.session_state.review_set
    verdict_form.submit(at, {c.id: "MET" for c in seeded.version.criteria}, advance=True)
    before = _set_picker(at)  # as the browser still has it
    shown = before.value
    assert shown == first
    at.button(key="review_done_next_set").click().run()
    moved = at.session_state.review_set
    assert moved != first and {moved[0], first[0]} == {other.id, seeded.responses[0].dataset_id}
    before.set_value(shown).run()  # the set panel's poll, sent before that run arrived
    assert not at.exception
    assert at.session_state.review_set == moved
    assert _set_picker(at).value == moved
