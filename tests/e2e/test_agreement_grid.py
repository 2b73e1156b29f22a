"""The human-baseline grid on the Agreement page in a real browser, at 1280x800 and 1920x1080:
it fits the width (no sideways page scroll)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from storage.engine import open_database
from tests.e2e.streamlit_page import no_tracebacks, open_section, wait_idle
from tests.kinds import seed_grid

SHOTS = Path(os.environ.get("REVIEW_SHOTS", "test-artifacts/screenshots"))


def _seed(url: str) -> None:
    sessions = open_database(url)
    seed_grid(sessions)
    sessions.kw["bind"].dispose()


@pytest.mark.parametrize("width,height", [(1280, 800), (1920, 1080)])
def test_the_baseline_grid_fits_the_screen(seeded_app_server, page, width, height):
    url = seeded_app_server(_seed)
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{url}/agreement")
    open_section(page, "Human baseline")
    heading = page.get_by_role("heading", name="Human baseline")
    expect(heading).to_be_attached(timeout=60_000)
    wait_idle(page)
    no_tracebacks(page)
    heading.scroll_into_view_if_needed()
    # the grid is the first table after the section's caption
    grid = page.locator(
        '[data-testid="stElementContainer"]:has-text("Is each judge as good as a second") ~ '
        '[data-testid="stElementContainer"] [data-testid="stDataFrame"]').first
    expect(grid).to_have_count(1, timeout=30_000)
    grid.evaluate("element => element.scrollIntoView({block: 'start'})")
    expect(grid).to_be_in_viewport()
    box = grid.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"agreement-grid-{width}.png"))
