"""Results keeps its view in the URL (issue 35, item 13), in a real browser: runs, search,
sort and order set by hand survive going to another page and back, a reload, and the copied
URL opened in a second browser (no shared session) shows the same view."""

from __future__ import annotations

import random

from playwright.sync_api import Browser, Page, expect

from grading.types import ScoringSettings, Verdict
from storage.engine import open_database
from storage.services import datasets, runs
from tests.actors import ADMIN
from tests.e2e.streamlit_page import choose, no_tracebacks, wait_idle
from tests.storage.helpers import CRITERIA, judge_report, make_rubric, make_run

M, U = Verdict.MET, Verdict.UNMET


def _seed(url: str) -> None:
    """12 replies graded by two per-criterion runs (#1 and #2)."""
    sessions = open_database(url)
    version = make_rubric(sessions, "Support")
    dataset = datasets.create_dataset(sessions, "Support replies", responses=[
        {"id": f"s{i:02d}", "query": f"Where is my order {i}?",
         "text": f"Your order {i} ships tomorrow."} for i in range(12)], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    rng = random.Random(7)
    for _ in range(2):
        run = make_run(sessions, version.id, dataset.id)
        runs.start_run(sessions, run.id, worker="seed")
        for response in responses:
            verdicts = [rng.choice([M, U]) for _ in CRITERIA]
            runs.record_grade(sessions, run.id, response.id,
                              judge_report(CRITERIA, verdicts, ScoringSettings(),
                                           response.output))
        runs.finish_run(sessions, run.id)
    sessions.kw["bind"].dispose()


def _runs(page: Page):
    return page.get_by_test_id("stMultiSelect").filter(
        has=page.get_by_role("combobox", name="Runs to compare"))


def _the_view(page: Page) -> None:
    """The view set by hand: run #1 only, searched, sorted by score, descending."""
    expect(page.get_by_role("heading", name="Results", exact=True)).to_be_visible(
        timeout=60_000)
    wait_idle(page)
    no_tracebacks(page)
    expect(page.get_by_text("Showing 1–3 of 3 matching responses", exact=False)).to_be_visible(
        timeout=60_000)
    expect(page.get_by_role("textbox", name="Search id, query and output")).to_have_value(
        "order 1")
    expect(page.get_by_role("combobox", name="Sort by", exact=True)).to_have_value(
        "Effective score")
    expect(page.get_by_role("combobox", name="Order", exact=True)).to_have_value("Descending")
    expect(_runs(page)).to_contain_text("#1")
    expect(_runs(page)).not_to_contain_text("#2")


def test_results_view_survives_a_reload_and_opens_from_the_copied_url(
        seeded_app_server, page: Page, browser: Browser, screenshot):
    url = seeded_app_server(_seed)
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{url}/results")
    expect(page.get_by_text("Showing 1–12 of 12 matching responses", exact=False)).to_be_visible(
        timeout=60_000)
    wait_idle(page)
    # The view shown pins its dataset and runs in the URL at once.
    page.wait_for_function("() => location.search.includes('runs=1%2C2')", timeout=20_000)

    # Run #2 out: its tag's delete mark.
    _runs(page).get_by_role("button", name="Remove #2 ", exact=False).last.click()
    wait_idle(page)
    expect(_runs(page)).not_to_contain_text("#2")
    search = page.get_by_role("textbox", name="Search id, query and output")
    search.fill("order 1")
    search.press("Enter")
    wait_idle(page)
    choose(page, "Sort by", "Effective score")
    choose(page, "Order", "Descending")
    wait_idle(page)
    _the_view(page)
    # The widgets show the view as soon as they are clicked; the URL follows when the run
    # the last click asked for has ended (``wait_idle`` can return before that run starts).
    page.wait_for_function(
        "() => ['sort=score', 'desc=1', 'q=order'].every(p => location.search.includes(p))",
        timeout=20_000)
    link = page.url
    assert "runs=1" in link and "desc=1" in link and "q=order" in link, link
    screenshot("results-view-set")

    # Another page and back through the sidebar, in the same session.
    page.get_by_role("link", name="Rubrics").click()
    expect(page.get_by_role("heading", name="Rubrics", exact=True)).to_be_visible(
        timeout=60_000)
    wait_idle(page)
    page.get_by_role("link", name="Results").click()
    _the_view(page)

    # Another page and back with the browser's Back button.
    page.get_by_role("link", name="Rubrics").click()
    expect(page.get_by_role("heading", name="Rubrics", exact=True)).to_be_visible(
        timeout=60_000)
    wait_idle(page)
    page.go_back()
    _the_view(page)
    page.wait_for_function("() => location.search.includes('sort=score')", timeout=20_000)

    page.reload()
    _the_view(page)
    assert page.url == link

    other = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        second = other.new_page()
        second.goto(link)
        _the_view(second)
        second.screenshot(path=str(screenshot("results-view-set").parent
                                   / "results-view-from-link.png"), full_page=True)
    finally:
        other.close()
