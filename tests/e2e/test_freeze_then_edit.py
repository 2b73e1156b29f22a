"""Freeze a draft, then "Edit as new version": the first click opens the editor (it did
nothing, twice out of two tries)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from grading.types import Criterion
from storage.engine import open_database
from storage.services import rubrics
from tests.actors import ADMIN
from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.streamlit_page import no_tracebacks, wait_idle


def _seed(db_url: str) -> None:
    sessions = open_database(db_url)
    rubrics.create_rubric(sessions, "Refunds", [
        Criterion(name="window", requirement="States the refund window", weight=10),
        Criterion(name="polite", requirement="Is polite", weight=2),
    ], actor=ADMIN)
    sessions.kw["bind"].dispose()


def test_the_first_click_on_edit_as_new_version_after_freeze_opens_the_editor(
        seeded_app_server, page: Page, screenshot):
    url = seeded_app_server(_seed)
    page.set_viewport_size({"width": 1400, "height": 1200})
    page.goto(f"{url}/rubrics")
    expect(page.get_by_role("heading", name="Refunds")).to_be_visible(timeout=45_000)
    wait_idle(page)
    page.get_by_role("button", name="Freeze version").click()
    wait_idle(page)
    expect(page.get_by_text("Version 1 is frozen: grading runs refer to it")).to_be_visible()
    page.get_by_role("button", name="Edit as new version").click()  # once
    wait_idle(page)
    screenshot("freeze-then-edit")
    expect(page.get_by_text("Editing a copy of frozen version 1")).to_be_visible()
    expect(page.get_by_role("button", name="Save as new version")).to_be_visible()
    no_tracebacks(page)


def test_a_version_frozen_in_another_tab_stays_picked_and_edit_as_new_version_works(
        seeded_app_server, browser):
    """The picker's label changes under the page ("draft" -> "frozen") when another tab
    freezes the version: the version picked stays the one shown, and the first click on
    "Edit as new version" opens the editor."""
    url = seeded_app_server(_seed)

    def tab() -> Page:
        opened = browser.new_context(viewport={"width": 1400, "height": 1200}).new_page()
        opened.goto(f"{url}/rubrics")
        expect(opened.get_by_role("heading", name="Refunds")).to_be_visible(timeout=45_000)
        wait_idle(opened)
        return opened

    mine, other = tab(), tab()
    expect(mine.get_by_role("button", name="Freeze version")).to_be_visible()
    other.get_by_role("button", name="Freeze version").click()
    wait_idle(other)
    expect(other.get_by_text("Version 1 is frozen: grading runs refer to it")).to_be_visible()
    mine.get_by_text("Show archived").click()  # any rerun of this page
    wait_idle(mine)
    expect(mine.get_by_text("Version 1 is frozen: grading runs refer to it")).to_be_visible()
    mine.get_by_role("button", name="Edit as new version").click()
    wait_idle(mine)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    mine.screenshot(path=str(SCREENSHOTS / "frozen-elsewhere-then-edit.png"), full_page=True)
    expect(mine.get_by_text("Editing a copy of frozen version 1")).to_be_visible()
    no_tracebacks(mine)
