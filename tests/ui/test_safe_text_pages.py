"""User and model text on the pages: directives and a right-to-left override render as the
characters they are (issue 9 item 8). The browser check is tests/e2e/test_safe_text.py."""

from __future__ import annotations

import re

import pytest

from tests.ui import verdict_form
from tests.ui.hostile_seed import CRITERION, ICON, REVIEWER, RLO, RUBRIC, seed_hostile
from tests.ui.pages import db, open_page

SHOWN_RLO = "⟨U+202E⟩"


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _bodies(at) -> list[str]:
    """Every markdown body the page sends (messages, captions, headings, popover contents)."""
    kinds = ("markdown", "caption", "subheader", "header", "title", "success", "error",
             "info", "warning", "toast")
    return [str(e.value) for kind in kinds for e in getattr(at, kind, [])]


def _as_parsed(body: str) -> str:
    """What Streamlit's shortcode step sees: the text after the parser undid the escapes."""
    return re.sub(r"\\(.)", r"\1", body)


def _assert_safe(at) -> None:
    for body in _bodies(at):
        assert ICON not in _as_parsed(body), body  # would become an icon
        assert RLO not in body, body
    for element in list(at.code) + list(at.text):
        assert RLO not in str(element.value)


def _open_result(at, response_id):
    at.session_state["results_open_response"] = response_id
    at.session_state["results_dialog_pending"] = True
    return at.run()


def test_results_dialog_shows_names_reasons_and_history_as_typed():
    hostile = seed_hostile(db())
    at = _open_result(open_page("results"), hostile.response.id)
    assert not at.exception
    _assert_safe(at)
    bodies = _bodies(at)
    # The criterion heading, the History popover and the human cell carry the names, escaped.
    assert any(body.startswith("**1. \\:\u2060material\\/home\\:**") for body in bodies)
    assert any(body.startswith("**\\:\u2060material\\/home\\: Ana**") for body in bodies)
    codes = [c.value for c in at.code]
    assert f"The refund is 10{SHOWN_RLO}05 dollars, paid in 3 days." in codes
    assert f"The amount{SHOWN_RLO} is stated." in [t.value for t in at.text]


def test_review_save_message_and_headings_show_the_criterion_name_as_typed():
    hostile = seed_hostile(db(), review=False)
    at = open_page("review")
    at.text_input(key="review_name_input").input(REVIEWER).run()
    criterion = hostile.version.criteria[0].id
    verdict_form.submit(at, {criterion: "UNMET"})
    assert not at.exception
    _assert_safe(at)
    assert any(body.startswith("Saved 1 verdict (\\:\u2060material\\/home\\:)")
               for body in _bodies(at))
    assert CRITERION  # the name itself is still in the message, only escaped


def test_rubric_heading_and_criteria_table_show_the_name_as_typed():
    seed_hostile(db())
    at = open_page("rubrics")
    assert not at.exception
    _assert_safe(at)
    assert any(h.value.startswith("\\:\u2060material\\/home\\: Rubric")
               for h in at.subheader)
    assert RUBRIC
