"""Review pairs in a real browser: a reviewer answers a compared pair by keyboard (A for the
response on the left, T for a tie), the answers are stored in the comparison's own terms
(mapped back when the sides were shown swapped), and the source names, the judge's
preferences and the people's result appear only once the pair is answered."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from storage import models as m
from storage.engine import open_database
from tests.e2e.streamlit_page import no_tracebacks, wait_idle
from tests.storage.pair_fixtures import make_comparison

SEEDED: dict[str, object] = {}


def _seed(url: str) -> None:
    sessions = open_database(url)
    _cid, pairs, _names = make_comparison(sessions, pairs=2, judge=("A", "B"))
    SEEDED.update(url=url, pairs=pairs)
    sessions.kw["bind"].dispose()


@pytest.fixture(scope="module")
def pairs_app(seeded_app_server):
    return seeded_app_server(_seed)


def _stored() -> list[tuple]:
    sessions = open_database(SEEDED["url"])
    try:
        with sessions() as session:
            return [(r.pair_id, r.position, r.side, r.swapped) for r in session.scalars(
                select(m.PairReviewRow).order_by(m.PairReviewRow.id))]
    finally:
        sessions.kw["bind"].dispose()


def test_a_pair_is_answered_by_keyboard_and_mapped_back_to_the_comparisons_sides(
        pairs_app, page: Page, screenshot):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{pairs_app}/review_pairs")
    heading = page.get_by_role("heading", name="Review pairs", exact=True)
    expect(heading).to_be_visible(timeout=45_000)
    expect(page.get_by_text("Pair 1 of 2").first).to_be_visible(timeout=30_000)
    wait_idle(page)
    left = page.locator(".st-key-pairs_side_A")
    swapped = "new answer" in left.inner_text()
    # Blind: no source name before answering.
    expect(page.get_by_text("Old prompt")).to_have_count(0)
    expect(page.get_by_text("New prompt")).to_have_count(0)
    # The pair's own words: a preference (nothing of the judges to accept), and a penalty
    # asked as the judge was asked it.
    expect(page.get_by_role("radiogroup", name="Which is better?")).to_have_count(2)
    expect(page.get_by_role("button", name="Accept the judges where they agree")).to_have_count(0)
    expect(page.get_by_text("Penalty — which response better avoids this")).to_be_visible()
    screenshot("review-pairs-blind")

    heading.click()  # the focus off any input
    page.keyboard.press("a")  # criterion 1: the left response is better
    page.keyboard.press("t")  # criterion 2: a tie
    page.keyboard.press("Control+Enter")

    expect(page.get_by_text("Saved 2 preferences").first).to_be_visible(timeout=30_000)
    first = SEEDED["pairs"][0]
    assert _stored() == [(first, 0, "B" if swapped else "A", swapped),
                         (first, 1, "TIE", swapped)]
    # Answered: the sources are named on their sides, and the judge's preference shown.
    names = ("New prompt", "Old prompt") if swapped else ("Old prompt", "New prompt")
    expect(left).to_contain_text(names[0])
    expect(page.locator(".st-key-pairs_side_B")).to_contain_text(names[1])
    expect(page.get_by_text("With people's preferences").first).to_be_visible()
    screenshot("review-pairs-answered")
    no_tracebacks(page)


def test_a_second_tab_with_an_old_form_is_refused_and_writes_nothing(
        pairs_app, page: Page, screenshot):
    """Tab 2 was opened on pair 2 before tab 1 answered it: its save is refused with a
    message (reload and decide again), nothing of it is written."""
    other = page.context.new_page()
    for tab in (page, other):
        tab.set_viewport_size({"width": 1400, "height": 1000})
        tab.goto(f"{pairs_app}/review_pairs")
        expect(tab.get_by_text("Pair 1 of 2").first).to_be_visible(timeout=45_000)
        wait_idle(tab)
        tab.locator(".st-key-pairs_next button").click()
        expect(tab.get_by_text("Pair 2 of 2").first).to_be_visible(timeout=30_000)
        wait_idle(tab)
    before = len(_stored())
    page.get_by_role("heading", name="Review pairs", exact=True).click()
    page.keyboard.press("b")
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("Saved 1 preference").first).to_be_visible(timeout=30_000)
    assert len(_stored()) == before + 1

    other.get_by_role("heading", name="Review pairs", exact=True).click()
    other.keyboard.press("a")
    other.keyboard.press("Control+Enter")
    expect(other.get_by_text("Not saved:").first).to_be_visible(timeout=30_000)
    expect(other.get_by_text("changed this preference").first).to_be_visible()
    assert len(_stored()) == before + 1
    screenshot("review-pairs-stale-tab")
    no_tracebacks(other)
    other.close()
