"""Few-shot calibration in a real browser: too large a k is refused on the Grade page, a
calibrated run is graded by the app's worker against the fake provider with the examples in
its prompts, the run list shows them, and Agreement says what the run is measured on."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from storage.engine import open_database
from storage.services import calibration, reviews, runs
from tests.actors import ADMIN
from tests.e2e.conftest import _serve, database_url_in
from tests.e2e.streamlit_page import no_tracebacks as _no_tracebacks
from tests.e2e.streamlit_page import wait_idle as _wait_idle
from tests.e2e.test_journey import _type
from tests.fake_provider import FakeProvider
from tests.storage.helpers import make_dataset, make_rubric


@pytest.fixture(scope="module")
def provider():
    fake = FakeProvider().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def app(tmp_path_factory, provider):
    data_dir = tmp_path_factory.mktemp("calibration")
    sessions = open_database(database_url_in(data_dir))
    version = make_rubric(sessions, name="Calibrated rubric")
    _dataset, responses = make_dataset(sessions, name="Calibrated answers", count=8)
    for i, response in enumerate(responses[:5]):
        for c, criterion in enumerate(version.criteria):
            reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response.id,
                                      criterion_id=criterion.id,
                                      verdict="MET" if (i + c) % 2 else "UNMET",
                                      note=f"reviewer note {i}")
    url, stop = _serve(data_dir, {"RUBRIC_WORKBENCH_API_KEY": "calibration-test-key"})
    yield url, sessions
    stop()


def test_calibrate_launch_and_see_held_out_agreement(page: Page, app, provider, screenshot):
    url, sessions = app
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(f"{url}/grade")
    expect(page.get_by_role("heading", name="Grade", exact=True)).to_be_visible(
        timeout=45_000)
    _wait_idle(page)
    _type(page, "Other models (litellm names, comma-separated)", "openai/fake-judge")
    _type(page, "api_base for these models (optional)", provider.api_base)
    page.get_by_text("Calibrate with reviewed examples").click()
    _wait_idle(page)
    _type(page, "Examples per criterion (k)", "6", role="spinbutton")
    expect(page.get_by_text("6 examples per criterion were asked for")).to_be_visible(
        timeout=20_000)
    _wait_idle(page)
    screenshot("calibration-refused")
    expect(page.get_by_role("button", name="Launch 1 run")).to_be_disabled(timeout=60_000)

    _type(page, "Examples per criterion (k)", "2", role="spinbutton")
    expect(page.get_by_text("Each prompt will show 2 reviewed examples per criterion")
           ).to_be_visible(timeout=20_000)
    _wait_idle(page)
    _no_tracebacks(page)
    expect(page.get_by_role("button", name="Launch 1 run")).to_be_enabled(timeout=60_000)
    page.get_by_role("button", name="Launch 1 run").click()
    expect(page.get_by_text("Queued 1 run")).to_be_visible(timeout=20_000)
    expect(page.get_by_text("Examples shown to the judge")).to_be_visible(timeout=60_000)
    [run] = runs.list_runs(sessions)
    for _ in range(180):  # the app's worker grades it against the fake provider
        if runs.get_run(sessions, run.id).finished:
            break
        page.wait_for_timeout(500)
    page.get_by_text("Examples shown to the judge").click()
    _wait_idle(page)
    screenshot("calibration-examples")

    [run] = runs.list_runs(sessions)
    assert run.status == "done" and run.settings.calibration.k == 2
    used = calibration.list_run_examples(sessions, run.id)
    prompts = [b["messages"][-1]["content"] for b in provider.bodies]
    assert len(prompts) == 8 * 4
    assert all(p.count("<example number=") == 2 for p in prompts)
    assert all(f"reviewer note {i}" in "".join(prompts) for i in
               {int(e.response_label[1:]) for e in used if e.role == "example"})

    page.goto(f"{url}/agreement")
    expect(page.get_by_role("heading", name="Agreement", exact=True)).to_be_visible(
        timeout=45_000)
    examples = len({e.response_id for e in used})
    expect(page.get_by_text(f"held out: {5 - examples} of 5 reviewed responses; "
                            f"{examples} were examples")).to_be_visible(timeout=30_000)
    _no_tracebacks(page)
    screenshot("calibration-agreement")
