"""AppTest: the Results view lives in the URL (a reload or a link shows it again) and in the
session (leaving the page and coming back shows it again); a link's stale or unreadable
values are dropped with a note, never a traceback."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.ui.pages import APP, open_page, texts
from tests.ui.seed import seed_graded


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _ids(at):
    return list(at.dataframe[0].value["ID"])


def _open_link(params: dict[str, str]) -> AppTest:
    """A new session opened on a Results link (what a reload or a pasted URL is)."""
    at = AppTest.from_file(APP, default_timeout=30)
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page("app_pages/results.py").run()
    assert not at.exception, at.exception
    return at


def test_a_changed_view_is_written_to_the_url_and_a_link_shows_it_again():
    seeded = seed_graded(count=3)
    first, second = (run.id for run in seeded.runs)
    at = open_page("results")
    at.multiselect(key="results_run_ids").set_value([second]).run()
    at.selectbox(key="results_sort").set_value("score").run()
    at.selectbox(key="results_descending").set_value(True).run()
    at.checkbox(key="results_disagree_only").check().run()
    at.checkbox(key="results_disagree_only").uncheck().run()
    at.text_input(key="results_search").input("answer").run()
    params = {key: at.query_params[key] for key in at.query_params}
    assert params["runs"] == str(second) and params["sort"] == "score"
    assert params["desc"] == "1" and params["q"] == "answer"
    assert "disagree" not in params  # defaults are left out of the URL
    shown = _ids(at)

    again = _open_link({key: (v[0] if isinstance(v, list) else v)
                        for key, v in params.items()})
    assert again.multiselect(key="results_run_ids").value == [second]
    assert again.selectbox(key="results_sort").value == "score"
    assert again.selectbox(key="results_descending").value is True
    assert again.text_input(key="results_search").value == "answer"
    assert _ids(again) == shown
    assert first not in again.multiselect(key="results_run_ids").value


def test_leaving_results_and_coming_back_keeps_the_view():
    seeded = seed_graded(count=3)
    at = open_page("results")
    at.multiselect(key="results_run_ids").set_value([seeded.runs[0].id]).run()
    at.checkbox(key="results_failed_only").check().run()
    at.switch_page("app_pages/rubrics.py").run()
    at.switch_page("app_pages/results.py").run()
    assert not at.exception
    assert at.multiselect(key="results_run_ids").value == [seeded.runs[0].id]
    assert at.checkbox(key="results_failed_only").value is True


def test_a_stale_or_unreadable_link_is_explained_not_a_traceback():
    seeded = seed_graded(count=3)
    at = _open_link({"runs": f"{seeded.runs[0].id},999", "sort": "nonsense", "page": "-3",
                     "range": "0.9-0.1", "set": "x", "panels": "77"})
    shown = texts(at)
    assert "Run #999 of the link no longer exists here: left out." in shown
    assert "Panel P77 of the link no longer exists here: left out." in shown
    assert "could not be read" in shown and "nonsense" in shown
    assert at.multiselect(key="results_run_ids").value == [seeded.runs[0].id]
    assert at.selectbox(key="results_sort").value == "response"
    assert _ids(at) == ["r0", "r1", "r2"]


def test_a_rerun_that_carries_an_older_url_of_the_session_keeps_the_newer_view():
    # Each rerun carries the URL the browser shows. A change made before the browser applied
    # the page's last write (typing fast, a loaded machine) carries an older URL this session
    # wrote itself: that is an echo, not a link, and must not put the older view back.
    seed_graded(count=3)
    at = open_page("results")
    at.text_input(key="results_search").input("answer").run()
    older = {key: at.query_params[key] for key in at.query_params}
    assert older.get("q") == "answer"
    at.selectbox(key="results_sort").set_value("score").run()
    assert at.query_params["sort"] == "score"
    # The browser had not applied the write with sort=score when the next change was made.
    for key in list(at.query_params):
        del at.query_params[key]
    for key, value in older.items():
        at.query_params[key] = value
    at.selectbox(key="results_descending").set_value(True).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="results_sort").value == "score"
    assert at.selectbox(key="results_descending").value is True
    assert at.text_input(key="results_search").value == "answer"
    params = {key: at.query_params[key] for key in at.query_params}
    assert params["sort"] == "score" and params["desc"] == "1" and params["q"] == "answer"
