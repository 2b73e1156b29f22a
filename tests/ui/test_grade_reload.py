"""The Grade page after a reload or in a second browser, around a calibrated launch.

A reload is a new Streamlit session: nothing of the old one's form or flags survives. What it
must see is the run already made, and a Launch from it must not make a copy (nor draw a
second set of examples).
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from storage.services import calibration, runs
from tests.ui.pages import frame_with, texts, unescape
from tests.ui.test_grade_calibration import (  # noqa: F401  (reviewed is a fixture)
    _calibrating,
    _run_count,
    open_page,
    reviewed,
)

MODELS = "openai/judge-a\nopenai/judge-b"


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _launch(at: AppTest) -> AppTest:
    at.button(key="grade_launch").click().run()
    assert not at.exception, at.exception
    return at


def _examples(sessions, run_id: int) -> list[tuple[int, int, str]]:
    return sorted((e.response_id, e.criterion_id, e.role)
                  for e in calibration.list_run_examples(sessions, run_id))


def _headings(at: AppTest) -> str:
    return unescape("\n".join(str(m.value) for m in at.markdown))


@pytest.mark.parametrize("state", ["queued", "running"])
def test_a_second_browser_sees_the_calibrated_run_and_does_not_queue_it_again(reviewed,  # noqa: F811
                                                                            state):
    sessions, *_ = reviewed
    first = _calibrating(2)
    _launch(first)
    [run] = runs.list_runs(sessions)
    if state == "running":
        runs.start_run(sessions, run.id, worker="test")
    drawn = _examples(sessions, run.id)
    assert drawn

    again = _calibrating(2)  # a reload: a new session, the same settings typed again
    assert f"#{run.id}" in _headings(again) and "calibrated (k=2)" in _headings(again)
    assert _run_count(sessions) == 1  # opening the page made nothing
    _launch(again)
    assert [r.id for r in runs.list_runs(sessions)] == [run.id]
    assert runs.get_run(sessions, run.id).status == state
    shown = texts(again)
    assert "not launched again" in shown and f"#{run.id}" in shown
    assert _examples(sessions, run.id) == drawn  # no second draw of examples


def test_a_launch_cut_short_by_a_reload_is_completed_not_duplicated(reviewed):  # noqa: F811
    """The browser went away after the first judge's run was queued (the database then holds
    just that run): launching both judges from the reloaded page queues only the missing one."""
    sessions, *_ = reviewed
    _launch(_calibrating(2))
    [kept] = runs.list_runs(sessions)

    again = _calibrating(2)
    again.text_input(key="grade_custom_models").input(MODELS).run()
    _launch(again)
    made = runs.list_runs(sessions)
    assert len(made) == 2 and kept.id in {r.id for r in made}
    [added] = [r for r in made if r.id != kept.id]
    assert (added.model, added.settings.calibration.k) == ("openai/judge-b", 2)
    shown = texts(again)
    assert f"Queued 1 run: #{added.id}" in shown and "not launched again" in shown


def test_a_finished_calibrated_run_is_listed_after_a_reload_and_nothing_is_queued(
        reviewed):  # noqa: F811
    sessions, *_ = reviewed
    _launch(_calibrating(2))
    [run] = runs.list_runs(sessions)
    runs.start_run(sessions, run.id, worker="test")
    runs.finish_run(sessions, run.id)

    again = open_page("grade")  # a reload: the form is back to its defaults
    table = frame_with(again, "Calibration")
    assert list(table["Calibration"]) == ["k=2, seed 0"]
    assert _run_count(sessions) == 1


def test_a_reload_shows_the_launch_form_as_it_was():
    """A reload is a new session: the form's choices come back from the URL (issue 35
    item 15: Grade's form was reset on reload)."""
    from tests.ui.pages import APP as app
    from tests.ui.seed import seed_graded

    seed_graded(count=3)
    at = AppTest.from_file(app, default_timeout=60)
    at.run()
    at.switch_page("app_pages/grade.py").run()
    at.radio(key="grade_selection_mode").set_value("first").run()
    at.number_input(key="grade_first_n").set_value(2).run()
    at.multiselect(key="grade_graders").set_value(["per_criterion", "one_shot"]).run()
    at.text_input(key="grade_custom_models").input("openai/judge-a, openai/judge-b").run()
    at.text_input(key="grade_api_base").input("http://127.0.0.1:9/v1").run()
    at.text_input(key="grade_run_name").input("nightly").run()
    assert not at.exception, at.exception
    params = {key: at.query_params[key] for key in at.query_params}

    again = AppTest.from_file(app, default_timeout=60)  # the reload: a new session
    for key, value in params.items():
        again.query_params[key] = value[0] if isinstance(value, list) else value
    again.switch_page("app_pages/grade.py").run()
    assert not again.exception, again.exception
    assert again.radio(key="grade_selection_mode").value == "first"
    assert again.number_input(key="grade_first_n").value == 2
    assert again.multiselect(key="grade_graders").value == ["per_criterion", "one_shot"]
    assert again.text_input(key="grade_custom_models").value == "openai/judge-a, openai/judge-b"
    assert again.text_input(key="grade_api_base").value == "http://127.0.0.1:9/v1"
    assert again.text_input(key="grade_run_name").value == "nightly"
    assert not again.warning or all("could not be read" not in w.value for w in again.warning)
