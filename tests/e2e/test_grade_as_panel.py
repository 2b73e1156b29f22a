"""Browser journey: three models graded "as a judge panel" from the Grade page. One click
queues a run per model and the panel over them; the same click from a second browser while
they are queued makes no second set of runs and no second panel; the app's worker grades them
against the fake provider, and Results shows the panel."""

from __future__ import annotations

import threading
import time

import pytest
from playwright.sync_api import Page, expect

from grading.types import Criterion
from storage.engine import open_database
from storage.services import datasets, panels, rubrics, runs
from tests.actors import ADMIN
from tests.e2e.conftest import _serve, database_url_in
from tests.e2e.streamlit_page import no_tracebacks, wait_idle
from tests.fake_provider import FakeProvider, Reply, judge_reply

MODELS = ("openai/judge-a", "openai/judge-b", "openai/judge-c")


class Held:
    """Holds every call until ``release()``: the runs stay queued while the test clicks again
    from a second browser, however fast the machine."""

    def __init__(self) -> None:
        self.opened = threading.Event()

    def __call__(self, body: dict) -> Reply:
        self.opened.wait(120)
        return judge_reply(body)


@pytest.fixture(scope="module")
def provider():
    fake = FakeProvider().start()
    fake.held = Held()
    fake.default = fake.held
    yield fake
    fake.held.opened.set()
    fake.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("grade-as-panel")
    db_url = database_url_in(data_dir)
    sessions = open_database(db_url)
    rubrics.create_rubric(sessions, "Dosing", [
        Criterion(name="accurate", requirement="States the dose", weight=10),
        Criterion(name="polite", requirement="Is polite", weight=2),
    ], actor=ADMIN)
    datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "query": f"What dose for case {i}?", "text": f"answer {i}"}
        for i in range(3)], actor=ADMIN)
    sessions.kw["bind"].dispose()
    url, stop = _serve(data_dir, {"RUBRIC_WORKBENCH_API_KEY": "panel-test-key"})
    yield url, db_url
    stop()


def _type(page: Page, label: str, value: str) -> None:
    field = page.get_by_role("textbox", name=label, exact=True)
    field.fill(value)
    field.press("Enter")
    wait_idle(page)


def _choose_panel(page: Page, url: str, api_base: str) -> None:
    page.goto(f"{url}/grade")
    expect(page.get_by_role("heading", name="Grade", exact=True)).to_be_visible(
        timeout=45_000)
    wait_idle(page)
    _type(page, "Other models (litellm names, comma-separated)", ", ".join(MODELS))
    _type(page, "api_base for these models (optional)", api_base)
    page.get_by_text("Grade as a judge panel").click()
    expect(page.get_by_role("switch", name="Grade as a judge panel")).to_be_checked()
    wait_idle(page)


def _finished(db_url: str) -> list:
    sessions = open_database(db_url)
    deadline = time.monotonic() + 180  # a loaded machine
    try:
        while True:
            found = runs.list_runs(sessions)
            if (found and all(r.status == "done" for r in found)) or (
                    time.monotonic() > deadline):
                return found
            time.sleep(0.5)
    finally:
        sessions.kw["bind"].dispose()


def _counts(db_url: str) -> tuple[int, int]:
    sessions = open_database(db_url)
    try:
        return len(runs.list_runs(sessions)), len(panels.list_panels(sessions))
    finally:
        sessions.kw["bind"].dispose()


def test_grade_as_a_panel_from_the_grade_page(server, provider, page: Page, browser,
                                              screenshot):
    url, db_url = server
    page.set_viewport_size({"width": 1280, "height": 800})
    _choose_panel(page, url, provider.api_base)
    expect(page.get_by_text("the estimate above covers every member")).to_be_visible()
    launch = page.get_by_role("button", name="Launch 3 runs as a panel")
    expect(launch).to_be_enabled()
    no_tracebacks(page)
    screenshot("grade-as-panel")
    launch.click()
    expect(page.get_by_text("Panel P1 (majority of runs ").first).to_be_visible(
        timeout=60_000)
    wait_idle(page)
    no_tracebacks(page)
    screenshot("grade-as-panel-queued")
    assert _counts(db_url) == (3, 1)

    # A second browser, the same choice, the same click while the runs are still queued.
    other = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        second = other.new_page()
        _choose_panel(second, url, provider.api_base)
        second.get_by_role("button", name="Launch 3 runs as a panel").click()
        expect(second.get_by_text("already exists, so no new panel was made")).to_be_visible(
            timeout=60_000)
        no_tracebacks(second)
    finally:
        other.close()
    assert _counts(db_url) == (3, 1)

    # Results, opened while the members are still held: it says they are grading; once they
    # finish it redraws by itself (no click, no reload) with the panel beside them.
    page.get_by_role("link", name="Results").click()  # the same session, as a user goes
    expect(page.get_by_role("heading", name="Results", exact=True)).to_be_visible(
        timeout=45_000)
    wait_idle(page)
    expect(page.get_by_text("Still grading: #1 (0/3)")).to_be_visible(timeout=30_000)
    # As Grade's message said: the panel is beside its members, picked already.
    picked = page.get_by_test_id("stMultiSelect").filter(
        has=page.get_by_role("combobox", name="Panels to compare"))
    expect(picked).to_contain_text("panel 1 (majority of 3)", timeout=60_000)

    provider.held.opened.set()
    members = _finished(db_url)
    assert [(r.model, r.status, r.graded_count, r.failed_count) for r in members] == [
        (model, "done", 3, 0) for model in MODELS], [r.error for r in members]
    sessions = open_database(db_url)
    try:
        [panel] = panels.list_panels(sessions)
        assert [m.run.id for m in panel.members] == [r.id for r in members]
        assert len(panels.panel_grades(sessions, panel.id)) == 3
    finally:
        sessions.kw["bind"].dispose()
    expect(page.get_by_text("Still grading")).to_have_count(0, timeout=30_000)
    wait_idle(page)
    expect(picked).to_contain_text(f"panel {panel.id} (majority of 3)")
    expect(page.get_by_text("Judge panels are columns like the runs")).to_be_visible()
    responses = page.get_by_test_id("stMetric").filter(has_text="Responses")
    expect(responses.get_by_test_id("stMetricValue").first).to_have_text("3")
    no_tracebacks(page)
    screenshot("grade-as-panel-results")
