"""Results, Responses and Rubrics in a real browser at 1280x800 and 1920x1080: a click on a
row opens the response; directives and a right-to-left override show as typed; no label is
cut. Screenshots go to test-artifacts/screenshots/ (issue 9)."""

from __future__ import annotations

import random

import pytest
from playwright.sync_api import Page, expect

from grading.types import ScoringSettings, Verdict
from storage.engine import open_database
from storage.services import datasets, runs
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, holistic_report, judge_report, make_rubric, make_run
from tests.ui.hostile_seed import seed_hostile

M, U = Verdict.MET, Verdict.UNMET

SIZES = [pytest.param((1280, 800), id="1280x800"), pytest.param((1920, 1080), id="1920x1080")]
# Every button and popover label on the page whose text is wider than its box.
CUT_LABELS = """() => [...document.querySelectorAll(
    'button .stMarkdownEllipsis, button p, [data-testid="stWidgetLabel"] p')]
  .filter(el => el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1)
  .map(el => el.innerText)"""


def _seed(url: str) -> None:
    """The hostile set, and 40 support replies with a `model` column kept from the upload,
    graded by a per-criterion run and a holistic one."""
    sessions = open_database(url)
    seed_hostile(sessions)
    version = make_rubric(sessions, "Support")
    dataset = datasets.create_dataset(sessions, "Support replies", responses=[
        {"id": f"s{i:02d}", "query": f"Where is my order {i}? " * 3,
         "text": f"Your order {i} ships tomorrow. " * 6, "model": ("gpt", "claude")[i % 2]}
        for i in range(40)], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    per = make_run(sessions, version.id, dataset.id)
    holistic = make_run(sessions, version.id, dataset.id, grader="rubric_as_judge")
    rng = random.Random(4)
    for run in (per, holistic):
        runs.start_run(sessions, run.id, worker="seed")
        for response in responses:
            if run is per:
                verdicts = [rng.choice([M, U]) for _ in CRITERIA]
                report = judge_report(CRITERIA, verdicts, ScoringSettings(), response.output)
            else:
                report = holistic_report(CRITERIA, rng.randint(0, 100), ScoringSettings(),
                                         response.output)
            runs.record_grade(sessions, run.id, response.id, report)
        runs.finish_run(sessions, run.id)
    sessions.kw["bind"].dispose()


def _wait_idle(page: Page) -> None:
    page.wait_for_timeout(300)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=30_000)
    expect(page.locator('[data-testid="stSkeleton"]')).to_have_count(0, timeout=30_000)
    page.wait_for_timeout(500)


def _no_cut_labels(page: Page) -> None:
    assert page.evaluate(CUT_LABELS) == []


def _open(page: Page, url: str, path: str, heading: str) -> None:
    page.goto(f"{url}/{path}")
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible(
        timeout=45_000)
    _wait_idle(page)
    expect(page.get_by_text("Traceback")).to_have_count(0)


@pytest.mark.parametrize("size", SIZES)
def test_results_row_opens_the_response_and_text_shows_as_typed(
        seeded_app_server, page, screenshot, size):
    url = seeded_app_server(_seed)
    width, height = size
    page.set_viewport_size({"width": width, "height": height})
    _open(page, url, "results", "Results")
    expect(page.get_by_text("Showing 1–40 of 40 matching responses.", exact=False)).to_be_visible(
        timeout=45_000)
    _wait_idle(page)
    _no_cut_labels(page)
    screenshot(f"results-{width}")
    # The hostile set: names made of directives, model output with a right-to-left override.
    page.get_by_role("combobox", name="Results of").click()
    page.get_by_role("option").filter(has_text="material/home: answers").click()
    expect(page.get_by_text("Showing 1–1 of 1 matching responses.", exact=False)).to_be_visible(
        timeout=45_000)
    _wait_idle(page)
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    # The first row's selection box, under the 35-pixel header row.
    page.mouse.click(box["x"] + 16, box["y"] + 35 + 17)
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible(timeout=30_000)
    expect(dialog.get_by_text("The refund is 10", exact=False)).to_be_visible(timeout=30_000)
    _wait_idle(page)
    shown = dialog.inner_text().replace("\u2060", "")
    assert ":material/home:" in shown  # as typed, not an icon
    assert "The refund is 10⟨U+202E⟩05 dollars" in shown and "\u202e" not in shown
    assert "The amount⟨U+202E⟩ is stated." in shown
    screenshot(f"results-dialog-{width}")
    dialog.get_by_role("button", name="History (1)").click()
    popover = page.locator('[data-testid="stPopoverBody"]')
    expect(popover).to_be_visible(timeout=20_000)
    assert ":material/home: Ana" in popover.inner_text().replace("\u2060", "")
    screenshot(f"results-history-{width}")


@pytest.mark.parametrize("size", SIZES)
def test_rubrics_and_responses_fit_the_screen(seeded_app_server, page, screenshot, size):
    url = seeded_app_server(_seed)
    width, height = size
    page.set_viewport_size({"width": width, "height": height})
    _open(page, url, "rubrics", "Rubrics")
    expect(page.get_by_role("button", name="Frozen")).to_be_visible(timeout=30_000)
    _no_cut_labels(page)
    screenshot(f"rubrics-{width}")
    page.get_by_role("button", name="Edit as new version").click()
    expect(page.get_by_role("button", name="Save as new version")).to_be_visible(
        timeout=30_000)
    _wait_idle(page)
    _no_cut_labels(page)
    screenshot(f"rubrics-editor-{width}")
    _open(page, url, "responses", "Responses")
    _no_cut_labels(page)
    screenshot(f"responses-{width}")
