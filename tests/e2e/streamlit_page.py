"""Waiting on a Streamlit page the way a person waits: until the app says it is done.

Timeouts are generous on purpose: the browser tests share two cores with everything else, and
a rerun that takes 30 s there is slow, not wrong. Nothing here sleeps to hope a rerun ended.
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

IDLE = 90_000  # ms: one rerun on a loaded machine


def wait_idle(page: Page, timeout: float = IDLE) -> None:
    """Until the script run has ended (Streamlit's own run state) and no element is still a
    placeholder from the run before."""
    app = page.locator('[data-testid="stApp"]')
    expect(app).to_be_attached(timeout=timeout)
    for busy in ("initial", "running", "rerunRequested"):
        expect(app).not_to_have_attribute("data-test-script-state", busy, timeout=timeout)
    expect(page.locator('[data-testid="stSkeleton"]')).to_have_count(0, timeout=timeout)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=timeout)


def no_tracebacks(page: Page) -> None:
    expect(page.get_by_text("Traceback")).to_have_count(0)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def choose(page: Page, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox labelled ``label`` and check that it is shown chosen."""
    wait_idle(page)
    box = page.get_by_role("combobox", name=label, exact=True)
    # A list that opens past the bottom of the window closes when the page scrolls to it:
    # bring the field to the middle first, as a person would.
    box.evaluate("element => element.scrollIntoView({block: 'center'})")
    box.click()
    # Typing the option's name opens the list filtered to it, whether or not the click left
    # it open.
    box.fill(option)
    page.get_by_role("option", name=option, exact=True).click(timeout=30_000)
    expect(box).to_have_value(option)


def submit(page: Page, button, *outcomes, timeout: float = 60_000) -> None:
    """Click a form's submit ``button`` and wait until one of ``outcomes`` (locators) shows.

    On a loaded machine a click that lands while the browser is still settling the form can
    be dropped by the page before it reaches the app (CI saw it: the pasted text still in
    the form, no message, the app idle). A person clicks again; so does this — only once the
    app is idle and no outcome shows, so a slow submit is never sent twice.
    """
    wanted = outcomes[0]
    for extra in outcomes[1:]:
        wanted = wanted.or_(extra)
    button.click()
    try:
        expect(wanted.first).to_be_visible(timeout=15_000)
        return
    except AssertionError:
        wait_idle(page)
    if wanted.count():
        return
    button.click()
    expect(wanted.first).to_be_visible(timeout=timeout)


def open_section(page: Page, name: str, timeout: float = IDLE) -> None:
    """Click the page's tab ``name`` (the Agreement page draws only the open one) and wait
    until it is open and its content drawn."""
    tab = page.get_by_role("tab", name=name, exact=True)
    expect(tab).to_be_visible(timeout=timeout)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true", timeout=timeout)
    wait_idle(page, timeout)
