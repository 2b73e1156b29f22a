"""Blind review on the Results page, in a real browser, team mode: two reviewers signed in
through a real OpenID Connect provider (tests/oidc on 127.0.0.1). Ana answers a response
with a note; Bo, who has not answered it, opens Results and finds no trace of her verdict or
note — not in the table's effective score, the response dialog's scores, nor its History.
Once Bo has answered, he sees them (issue 40 item 3)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from grading.types import Criterion, Verdict
from storage.engine import open_database
from storage.services import people, review_sets
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.e2e import test_signin as signin
from tests.e2e.conftest import SCREENSHOTS, database_url_in
from tests.e2e.seed import judged_set
from tests.e2e.streamlit_page import open_section
from ui.agreement_text import TABS

CRITERIA = [
    Criterion(name="dose", requirement="States the adult dose", weight=10),
    Criterion(name="source", requirement="Names a source for the dose", weight=5),
]
SECRET = "ana saw the leaflet"
JUDGE_SCORE = "0.667"  # dose MET, source UNMET: 10 / 15
REVIEWED_SCORE = "1.000"  # both MET once people's verdicts apply


def _seed(url: str) -> None:
    sessions = open_database(url)
    seeded = judged_set(sessions, CRITERIA, 1, verdicts=[Verdict.MET, Verdict.UNMET])
    version, dataset = seeded.version, seeded.dataset
    review_sets.update_settings(sessions, actor=local_actor("admin"), dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=2)
    people.set_role(sessions, "ana@example.org", "reviewer", actor=ADMIN)
    people.set_role(sessions, "bo@example.org", "reviewer", actor=ADMIN)
    sessions.kw["bind"].dispose()


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    app_url, data_dir, provider, stop = signin._team_app(tmp_path_factory)
    _seed(database_url_in(data_dir))
    yield app_url
    stop()
    provider.stop()


def _idle(page: Page) -> None:
    page.wait_for_timeout(300)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=30_000)
    expect(page.locator('[data-testid="stSkeleton"]')).to_have_count(0, timeout=30_000)
    page.wait_for_timeout(500)


def _shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def _person(browser, login: str, url: str) -> Page:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    signin._loopback_only(context)
    page = context.new_page()
    signin._sign_in(page, url, login)
    return page


def _answer_both_met(page: Page, url: str, note: str) -> None:
    """On the Review page: a note on 'source', MET on both criteria by keyboard, Save."""
    page.goto(f"{url}/review")
    heading = page.get_by_role("heading", name="Review", exact=True)
    expect(heading).to_be_visible(timeout=45_000)
    _idle(page)
    expect(page.get_by_text("q0 ·").first).to_be_visible(timeout=20_000)
    page.get_by_role("textbox", name="Note (optional)").nth(1).fill(note)
    heading.click()  # the note is kept on blur; focus off the input for the keys
    _idle(page)
    for key in ("m", "m"):
        page.keyboard.press(key)
        _idle(page)
    page.get_by_role("button", name="Save", exact=True).click()
    _idle(page)
    expect(page.get_by_text("Saved 2 verdicts")).to_be_visible(timeout=20_000)


def _table_score(page: Page) -> str:
    """The run's effective score in the table's first row, as the page formats it."""
    grid = page.locator('[data-testid="stDataFrame"]').first
    headers = grid.locator('th[role="columnheader"]')
    expect(headers.first).to_be_attached(timeout=30_000)
    names = [text.strip() for text in headers.all_inner_texts()]
    column = next(i for i, name in enumerate(names, start=1) if name.endswith(" judge"))
    # The accessible table under the canvas holds the raw number; the canvas shows "%.3f".
    return f"{float(grid.locator(f'#glide-cell-{column}-0').inner_text()):.3f}"


def _open_results(page: Page, url: str) -> None:
    page.goto(f"{url}/results")
    expect(page.get_by_role("heading", name="Results", exact=True)).to_be_visible(
        timeout=45_000)
    expect(page.get_by_text("Showing 1–1 of 1 matching responses", exact=False)
           ).to_be_visible(timeout=45_000)
    _idle(page)
    expect(page.get_by_text("Traceback")).to_have_count(0)


def _open_dialog(page: Page):
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 16, box["y"] + 35 + 17)  # the first row's selection box
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible(timeout=30_000)
    expect(dialog.get_by_text("answer 0").first).to_be_visible(timeout=30_000)
    _idle(page)
    return dialog


def _history(page: Page, dialog, count: int) -> str:
    dialog.get_by_role("button", name=f"History ({count})").click()
    popover = page.locator('[data-testid="stPopoverBody"]')
    expect(popover).to_be_visible(timeout=20_000)
    page.wait_for_timeout(500)
    return popover.inner_text().replace("\u2060", "")


def _agreement_source(page: Page, url: str) -> str:
    """The Agreement page's text, the disagreement list's cells included (the grid keeps
    an accessible table of its cells in the page)."""
    page.goto(f"{url}/agreement")
    expect(page.get_by_role("heading", name="Agreement", exact=True)).to_be_visible(
        timeout=45_000)
    _idle(page)
    # every section (one tab each, only the open one is drawn), the first one last: it
    # holds the disagreement list the caller looks at
    shown = []
    for name in (*TABS[1:], TABS[0]):
        open_section(page, name)
        expect(page.get_by_text("Traceback")).to_have_count(0)
        shown.append(page.content().replace("\u2060", ""))
    return "\n".join(shown)


def test_a_reviewer_who_has_not_answered_sees_no_trace_of_anothers_verdict(team, browser):
    url = team
    ana = _person(browser, "ana", url)
    _answer_both_met(ana, url, SECRET)
    # Ana's own view moves at once: her verdicts are hers to see.
    _open_results(ana, url)
    assert _table_score(ana) == REVIEWED_SCORE
    # Agreement: her verdict against the judge's, her note beside it.
    _agreement_source(ana, url)
    expect(ana.locator('[data-testid="stDataFrame"] td').filter(has_text=SECRET).first
           ).to_be_attached(timeout=30_000)

    bo = _person(browser, "bo", url)
    _open_results(bo, url)
    # The table: the judge's score, as if nobody had answered (Ana's MET would lift it).
    assert _table_score(bo) == JUDGE_SCORE
    dialog = _open_dialog(bo)
    shown = dialog.inner_text().replace("\u2060", "")
    assert SECRET not in shown and "Ana" not in shown and "ana@" not in shown
    assert REVIEWED_SCORE not in shown and "by review" not in shown
    assert "reviewed 0/2" in shown
    history = _history(bo, dialog, 0)
    assert "No person has reviewed this response yet." in history
    assert SECRET not in history and "Ana" not in history
    _shot(bo, "blind-results-before-answering")
    # Nor on the Agreement page: no human source, no disagreement list with her note.
    bo_sees = _agreement_source(bo, url)
    assert SECRET not in bo_sees
    expect(bo.get_by_text("Fewer than two sources of per-criterion verdicts").first
           ).to_be_visible()
    _shot(bo, "blind-agreement-before-answering")

    # Bo answers (agreeing with Ana): now he sees her verdict and note, and the score moves.
    _answer_both_met(bo, url, "mine")
    _open_results(bo, url)
    assert _table_score(bo) == REVIEWED_SCORE
    dialog = _open_dialog(bo)
    assert "reviewed 2/2" in dialog.inner_text()
    history = _history(bo, dialog, 4)
    assert SECRET in history and "Ana" in history
    _shot(bo, "blind-results-after-answering")
