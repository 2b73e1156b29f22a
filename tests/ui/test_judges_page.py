"""AppTest checks of the Judges page: panels made from runs, and the wording trial's refusals."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from storage.services import panels
from tests.ui.pages import APP, texts
from tests.ui.seed import seed_graded


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _open(name: str = "Ada") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer_name"] = name
    at.run()
    at.switch_page("app_pages/judges.py")
    return at.run()


def test_empty_database_says_what_to_do():
    at = _open()
    assert not at.exception, at.exception
    assert "Nothing graded yet" in at.info[0].value


def test_a_panel_is_made_from_the_runs_and_shown_with_member_agreement():
    seeded = seed_graded(4)
    at = _open()
    assert not at.exception, at.exception
    assert at.multiselect[0].value == [
        f"run {r.id}: {r.grader.replace('_', '-')} · {r.model}" for r in seeded.runs]
    at.button[0].click().run()  # the form's "Create panel"
    assert not at.exception, at.exception
    [panel] = panels.list_panels(seeded.sessions)
    assert panel.rule == "majority" and [m.run.id for m in panel.members] == [
        r.id for r in seeded.runs]
    shown = texts(at)
    assert f"Created {panel.label}" in shown
    assert "majority of 2 runs" in shown
    frames = [df.value for df in at.dataframe]
    agreement = next(f for f in frames if "α" in f.columns)
    assert list(agreement["criterion"]) == ["accurate", "cites", "concise", "harmful"]
    # r1: the two judges disagree on 'cites'; a tie on a positive criterion goes to UNMET
    assert "Ties decided by the lower score" in [m.label for m in at.metric]


def test_weights_that_are_not_numbers_get_a_message_and_no_panel():
    seeded = seed_graded(3)
    at = _open()
    at.selectbox[1].set_value("weighted")
    at.text_input[0].set_value("two, one")
    at.button[0].click().run()
    assert "Weights must be numbers" in texts(at)
    assert panels.list_panels(seeded.sessions) == []


def test_a_wording_trial_with_no_reviewed_responses_says_what_to_do_first():
    seed_graded(3)
    at = _open()
    assert not at.exception, at.exception
    assert "nobody has reviewed 'accurate'" in "\n".join(w.value for w in at.warning)
    assert not [b for b in at.button if b.label == "Try it"]
