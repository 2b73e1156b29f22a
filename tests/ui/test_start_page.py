"""AppTest: the Start page — samples in one click (idempotent), how to connect, next steps."""

from __future__ import annotations

import pytest

from storage.services import datasets, rubrics
from tests.ui.pages import db, open_page, texts, unescape


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def test_loading_the_samples_twice_creates_them_once():
    at = open_page("home")
    assert {m.label: m.value for m in at.metric}["Rubrics"] == "0"
    at.button(key="home_load_sample").click().run()
    assert not at.exception
    assert "Loaded the rubric 'Sample: refund support'" in texts(at)
    assert {m.label: m.value for m in at.metric}["Rubrics"] == "1"

    at.button(key="home_load_sample").click().run()
    assert "The samples are already loaded" in texts(at)
    [rubric] = rubrics.list_rubrics(db())
    [dataset] = datasets.list_datasets(db())
    assert dataset.response_count == 4
    assert sum(c.weight < 0 for c in rubrics.latest_version(db(), rubric.id).criteria) == 2


def test_loaded_samples_are_selected_on_the_rubrics_and_responses_pages():
    at = open_page("home")
    at.button(key="home_load_sample").click().run()
    at.switch_page("app_pages/rubrics.py").run()
    assert unescape(at.subheader[0].value) == "Sample: refund support"
    at.switch_page("app_pages/responses.py").run()
    assert "Sample: refund replies" in unescape(at.subheader[0].value)


def test_the_connect_panel_names_the_environment_variables():
    at = open_page("home")
    shown = texts(at)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RUBRIC_WORKBENCH_API_KEY",
                 "http://127.0.0.1:11434/v1"):
        assert name in shown


def test_next_steps_link_to_every_workbench_page():
    at = open_page("home")
    links = {element.proto.page for element in at.get("page_link")}
    assert {"rubrics", "responses", "grade", "results", "review", "settings"} <= links


def _links(at) -> dict[str, str]:
    return {element.proto.label: element.proto.page for element in at.get("page_link")}


def test_after_loading_the_samples_start_points_to_the_next_step():
    at = open_page("home")
    at.button(key="home_load_sample").click().run()
    links = _links(at)
    # No model and no key yet: connecting one comes first, then grading.
    assert any(page == "settings" and "Point it at a model" in label
               for label, page in links.items())
    assert any(page == "grade" and label.startswith("Grade the sample")
               for label, page in links.items())
    at.switch_page("app_pages/grade.py").run()
    assert unescape(at.selectbox(key="grade_rubric_id").format_func(
        at.selectbox(key="grade_rubric_id").value)) == "Sample: refund support"
    assert at.selectbox(key="grade_dataset_id").value == datasets.list_datasets(db())[0].id


def test_with_a_model_ready_the_next_step_is_grading(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    at = open_page("home")
    at.button(key="home_load_sample").click().run()
    assert not any("Point it at a model" in label for label in _links(at))
    assert "grade" in _links(at).values()
