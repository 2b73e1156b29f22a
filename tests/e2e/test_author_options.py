"""In a real browser: turn a MET/UNMET criterion into a Likert 1-5 rating and save it."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from grading.types import Criterion
from storage.engine import open_database
from storage.services import rubrics
from tests.actors import ADMIN
from tests.e2e.grid import Grid
from tests.e2e.streamlit_page import choose, no_tracebacks, wait_idle
from ui.option_presets import PRESETS


def _seed(db_url: str) -> None:
    sessions = open_database(db_url)
    rubrics.create_rubric(sessions, "Refund replies", [
        Criterion(name="clarity", requirement="Explains the refund steps clearly", weight=10),
        Criterion(name="order", requirement="Asks for the order number", weight=5),
    ], actor=ADMIN)
    sessions.kw["bind"].dispose()


def test_author_a_likert_criterion(seeded_app_server, page: Page, screenshot):
    database = {}

    def seed(db_url: str) -> None:
        database["url"] = db_url
        _seed(db_url)

    url = seeded_app_server(seed)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{url}/rubrics")
    expect(page.get_by_role("heading", name="Refund replies")).to_be_visible(timeout=45_000)
    wait_idle(page)

    grid = Grid(page, ".st-key-rubrics_criteria")
    grid.edit("Judged as", 0, "rating")
    wait_idle(page)
    expect(page.get_by_text("Row 1 · clarity · rating options")).to_be_visible(timeout=30_000)
    page.locator(".st-key-rubrics_criteria").evaluate(
        "element => element.scrollIntoView({block: 'start'})")
    screenshot("rubrics_criteria_table_1280")
    choose(page, "Preset", "Likert 1-5")
    page.get_by_role("button", name="Use preset").click()
    wait_idle(page)
    page.get_by_text("Preview the judge's prompt").click()
    # In the prompt shown (the options table above also holds the label, in cells a canvas
    # draws: ``.first`` on the whole page could pick one of those, which is never visible).
    preview = page.get_by_test_id("stExpander").filter(has_text="Preview the judge's prompt")
    expect(preview.get_by_test_id("stCode").get_by_text("5 - Excellent").first).to_be_visible(
        timeout=30_000)
    screenshot("rubrics_options_editor_1280")
    page.get_by_role("button", name="Save criteria").click()
    expect(page.get_by_text("Saved 2 criteria in version 1")).to_be_visible(timeout=30_000)
    no_tracebacks(page)

    sessions = open_database(database["url"])
    [rubric] = rubrics.list_rubrics(sessions)
    clarity, order = rubrics.latest_version(sessions, rubric.id).criteria
    assert clarity.options == PRESETS["Likert 1-5"] and clarity.scale_type == "ordinal"
    assert order.options is None
    sessions.kw["bind"].dispose()
