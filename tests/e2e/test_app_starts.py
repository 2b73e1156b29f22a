"""The app starts under ``streamlit run`` and renders in a real browser."""

from __future__ import annotations

from playwright.sync_api import expect


def test_home_page_renders_in_chromium(app_server, page, screenshot):
    page.goto(app_server)
    expect(page.get_by_role("heading", name="Rubric Workbench")).to_be_visible(timeout=45_000)
    expect(page.get_by_text("Traceback")).to_have_count(0)
    assert screenshot("home").stat().st_size > 0
