"""The Grade page in a real browser follows runs that become active after it loaded, and
a double-clicked Launch queues each run once.

The app's own worker is off: the test plays the worker (or another browser, or the command
line) by writing through the storage services, so what the page shows is checked against
exactly what was stored, and it must appear without a reload.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from grading.types import ScoringSettings
from storage.engine import open_database
from storage.services import runs
from tests.actors import ADMIN
from tests.e2e.conftest import _serve, database_url_in
from tests.e2e.streamlit_page import choose as _choose
from tests.e2e.streamlit_page import wait_idle
from tests.e2e.test_journey import _type
from tests.storage.helpers import CRITERIA, judge_report, make_dataset, make_rubric
from tests.ui.seed import M, U


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("grade-live")
    sessions = open_database(database_url_in(data_dir))
    # Made before the server starts: the pickers read rubric and dataset lists from a cache.
    make_rubric(sessions, name="Double click rubric")
    make_dataset(sessions, name="Double click answers", count=3)
    url, stop = _serve(data_dir, {"RUBRIC_WORKBENCH_IN_PROCESS_WORKER": "0"})
    yield url, sessions
    stop()


def _grade(sessions, run_id: int, response) -> None:
    report = judge_report(CRITERIA, [M, M, M, U], ScoringSettings(), response.output)
    runs.record_grade(sessions, run_id, response.id, report)


def _open_grade(page: Page, url: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{url}/grade")
    expect(page.get_by_role("heading", name="Grade", exact=True)).to_be_visible(
        timeout=30_000)


def test_requeued_run_shows_live_progress_without_a_reload(page: Page, app, screenshot):
    url, sessions = app
    version = make_rubric(sessions, name="Requeue rubric")
    dataset, responses = make_dataset(sessions, name="Requeue answers", count=4)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/judge-requeue", actor=ADMIN)
    runs.start_run(sessions, run.id, worker="gone")
    _grade(sessions, run.id, responses[0])
    runs.fail_run(sessions, run.id, "the worker stopped")

    _open_grade(page, url)  # nothing is active when the page loads
    expect(page.get_by_role("progressbar")).to_have_count(0, timeout=30_000)
    page.get_by_role("button", name="Requeue").click()
    expect(page.get_by_text(f"Run #{run.id} is queued again")).to_be_visible(timeout=45_000)
    expect(page.get_by_role("progressbar")).to_have_count(1, timeout=45_000)

    # A worker picks it up and grades: the page follows, with no reload.
    runs.start_run(sessions, run.id, worker="cli-worker")
    for response in responses[1:3]:
        _grade(sessions, run.id, response)
    expect(page.get_by_text("3/4 graded").first).to_be_visible(timeout=45_000)
    screenshot("grade-requeued-live-1280")
    _grade(sessions, run.id, responses[3])
    runs.finish_run(sessions, run.id)
    expect(page.get_by_role("progressbar")).to_have_count(0, timeout=45_000)
    expect(page.get_by_text("refreshing every")).to_have_count(0)


def test_a_run_launched_elsewhere_appears_and_progresses(page: Page, app, screenshot):
    url, sessions = app
    version = make_rubric(sessions, name="Elsewhere rubric")
    dataset, responses = make_dataset(sessions, name="Elsewhere answers", count=2)
    _open_grade(page, url)
    expect(page.get_by_role("heading", name="Runs")).to_be_visible(timeout=30_000)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="one_shot", model="openai/judge-elsewhere", actor=ADMIN)
    progress = page.get_by_role("progressbar")
    expect(progress).to_have_count(1, timeout=45_000)  # it appears, with no reload
    expect(page.get_by_text("Waiting for a worker to pick it up.")).to_be_visible()
    expect(page.get_by_text("0/2 graded · cost —")).to_be_visible()
    runs.start_run(sessions, run.id, worker="another-machine")
    _grade(sessions, run.id, responses[0])
    expect(page.get_by_text("1/2 graded").first).to_be_visible(timeout=45_000)
    screenshot("grade-launched-elsewhere-1280")
    runs.cancel_run(sessions, run.id, actor=ADMIN)
    expect(progress).to_have_count(0, timeout=45_000)


def test_a_double_clicked_launch_queues_each_run_once(page: Page, app, screenshot):
    url, sessions = app
    _open_grade(page, url)
    _choose(page, "Rubric", "Double click rubric")
    _choose(page, "Dataset", "Double click answers (3 responses)")
    _type(page, "Other models (litellm names, comma-separated)", "openai/double")
    _type(page, "api_base for these models (optional)", "http://127.0.0.1:9/v1")
    launch = page.get_by_role("button", name="Launch 1 run")
    expect(launch).to_be_enabled(timeout=90_000)  # the first estimate imports litellm
    launch.dblclick()
    expect(page.get_by_text("Queued 1 run").or_(page.get_by_text("Already queued")).first
           ).to_be_visible(timeout=45_000)
    wait_idle(page)
    launch.click()  # a third click, after the page settled
    expect(page.get_by_text("Already queued")).to_be_visible(timeout=45_000)
    screenshot("grade-launch-again-1280")
    created = [r for r in runs.list_runs(sessions) if r.model == "openai/double"]
    assert [(r.response_count, r.status) for r in created] == [(3, "queued")]
