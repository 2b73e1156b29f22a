"""The version diff in a real browser (issue 35, item 11): a reworded requirement shows its old
and new wording in full, the removed words struck through, the added words bold, and markup
typed in the requirement shown as typed."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from grading.types import Criterion
from storage.engine import open_database
from storage.services import rubrics
from tests.actors import ADMIN
from tests.e2e.streamlit_page import no_tracebacks, wait_idle

TAIL = " and names the days it takes, in plain words, **not bold**"


def _seed(url: str) -> None:
    sessions = open_database(url)
    first = rubrics.create_rubric(sessions, "Support", [
        Criterion(name="refund", requirement="States the refund window" + TAIL, weight=10)],
        actor=ADMIN)
    rubrics.freeze_version(sessions, first.id, actor=ADMIN)
    rubrics.save_criteria(sessions, first.id, [
        Criterion(name="refund", requirement="States the return window" + TAIL, weight=10)],
        actor=ADMIN)
    sessions.kw["bind"].dispose()


def test_a_reworded_requirement_shows_both_wordings_marked(seeded_app_server, page: Page,
                                                             screenshot):
    url = seeded_app_server(_seed)
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{url}/rubrics")
    expect(page.get_by_role("heading", name="Rubrics", exact=True)).to_be_visible(
        timeout=60_000)
    wait_idle(page)
    page.get_by_role("tab", name="Compare versions (2)").click()
    wait_idle(page)
    old = page.locator('[data-testid="stMarkdownContainer"]').filter(has_text="Old: States")
    new = page.locator('[data-testid="stMarkdownContainer"]').filter(has_text="New: States")
    expect(old).to_have_count(1)
    expect(old.locator("del")).to_have_text("refund")
    expect(new.locator("strong")).to_have_text("return")
    expect(new.locator("del")).to_have_count(0)
    # the whole wording, markup as typed
    expect(old).to_contain_text("in plain words, **not bold**")
    no_tracebacks(page)
    old.scroll_into_view_if_needed()
    screenshot("rubrics-version-diff")
