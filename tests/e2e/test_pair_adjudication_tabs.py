"""An adjudicator's stale view in a real browser: two tabs show the same disputed pair
criterion; the first decides it, and the second tab's decision — made on a view that no
longer holds — is refused with a message saying who decided, instead of overwriting it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from storage import models as m
from storage.engine import open_database
from storage.services import pair_reviews
from storage.services.pair_sides import shown_swapped, to_shown
from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.streamlit_page import no_tracebacks, wait_idle
from tests.storage.pair_fixtures import ANN, BOB, make_comparison

SEEDED: dict[str, object] = {}


def _seed(url: str) -> None:
    sessions = open_database(url)
    _cid, pairs, _names = make_comparison(sessions, pairs=1, judge=("A", "B"))
    for who, side in ((ANN, "A"), (BOB, "B")):  # a dispute on "complete"
        flip = shown_swapped(who.key, pairs[0])
        pair_reviews.save_pair_review(
            sessions, actor=who, pair_id=pairs[0], shown_swapped=flip,
            preferences={"complete": to_shown(side, flip), "rude": "T"})
    SEEDED.update(url=url, pair=pairs[0])
    sessions.kw["bind"].dispose()


@pytest.fixture(scope="module")
def disputed_app(seeded_app_server):
    return seeded_app_server(_seed)


def _adjudications() -> list[tuple[str, str]]:
    sessions = open_database(SEEDED["url"])
    try:
        with sessions() as session:
            return [(r.side, r.reviewer) for r in session.scalars(
                select(m.PairReviewRow).where(m.PairReviewRow.stream == m.ADJUDICATION_STREAM)
                .order_by(m.PairReviewRow.id))]
    finally:
        sessions.kw["bind"].dispose()


def _open_card(tab: Page, url: str):
    tab.set_viewport_size({"width": 1400, "height": 1000})
    tab.goto(f"{url}/review_pairs")
    expect(tab.get_by_role("heading", name="Review pairs", exact=True)).to_be_visible(
        timeout=45_000)
    wait_idle(tab)
    tab.get_by_text("Waiting for adjudication (1)").click()
    card = tab.get_by_test_id("stForm")
    expect(card).to_contain_text("Ann: A (Old prompt)")
    return card


def test_a_decision_from_a_second_tab_on_a_decided_card_is_refused(
        disputed_app, page: Page, screenshot):
    other = page.context.new_page()
    first_card = _open_card(page, disputed_app)
    second_card = _open_card(other, disputed_app)  # both tabs show the undecided card

    first_card.get_by_test_id("stRadioGroup").get_by_text("B (New prompt)").click()
    first_card.get_by_role("button", name="Decide").click()
    expect(page.get_by_text("Decided complete of pair q0.").first).to_be_visible(
        timeout=30_000)
    [(side, who)] = _adjudications()
    assert side == "B"

    second_card.get_by_test_id("stRadioGroup").get_by_text("A (Old prompt)").click()
    second_card.get_by_role("button", name="Decide").click()
    expect(other.get_by_text("was decided meanwhile by").first).to_be_visible(timeout=30_000)
    expect(other.get_by_text(f"Not saved: complete was decided meanwhile by {who} "
                             "(B (New prompt))").first).to_be_visible()
    expect(other.get_by_text("Waiting for adjudication (0)")).to_be_visible()
    assert _adjudications() == [("B", who)]  # the first decision stands, nothing added
    screenshot("pair-adjudication-decided")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    other.screenshot(path=str(SCREENSHOTS / "pair-adjudication-stale-tab.png"), full_page=True)
    no_tracebacks(other)
    other.close()
