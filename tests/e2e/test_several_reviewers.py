"""Two signed-in reviewers (team mode, a real OpenID Connect provider on 127.0.0.1) review the
same responses blind, disagree on one criterion, an adjudicator resolves it — the effective
score changes only then — and the Agreement page shows the human baseline."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from grading.types import Criterion, Verdict
from storage.engine import open_database
from storage.services import people, review_sets, reviews
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.e2e import test_signin as signin
from tests.e2e.conftest import SCREENSHOTS, database_url_in
from tests.e2e.seed import judged_set
from tests.e2e.streamlit_page import open_section

M = Verdict.MET
CRITERIA = [
    Criterion(name="dose", requirement="States the adult dose", weight=10),
    Criterion(name="source", requirement="Names a source for the dose", weight=5),
]
SEEDED: dict[str, object] = {}


def _seed(url: str) -> None:
    sessions = open_database(url)
    seeded = judged_set(sessions, CRITERIA, 2)
    version, dataset, run, responses = (seeded.version, seeded.dataset, seeded.run,
                                        seeded.responses)
    review_sets.update_settings(sessions, actor=local_actor("admin"), dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=2)
    SEEDED.update(url=url, run=run.id, responses=[r.id for r in responses])
    sessions.kw["bind"].dispose()


def _score(response_index: int) -> float | None:
    sessions = open_database(SEEDED["url"])
    try:
        [grade] = reviews.effective_grades_for_run(
            sessions, SEEDED["run"], [SEEDED["responses"][response_index]])
        return grade.score
    finally:
        sessions.kw["bind"].dispose()


def _idle(page: Page) -> None:
    page.wait_for_timeout(300)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=30_000)


def _sign_in(page: Page, url: str, login: str) -> None:
    signin._sign_in(page, url, login)
    page.goto(f"{url}/review")
    expect(page.get_by_role("heading", name="Review", exact=True)).to_be_visible(
        timeout=45_000)
    _idle(page)
    expect(page.get_by_text("1 of 2").first).to_be_visible(timeout=20_000)
    page.get_by_role("heading", name="Review", exact=True).click()  # focus off the input


_SCROLLED = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    return Math.max(main ? main.scrollTop : 0, window.scrollY);
}"""


def _scroll_to_the_bottom(page: Page) -> None:
    page.evaluate("""() => {
        const main = document.querySelector('[data-testid="stMain"]');
        if (main) main.scrollTo(0, main.scrollHeight);
        window.scrollTo(0, document.body.scrollHeight);
    }""")


def _shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    app_url, data_dir, provider, stop = signin._team_app(tmp_path_factory)
    _seed(database_url_in(data_dir))
    sessions = open_database(database_url_in(data_dir))
    people.set_role(sessions, "ana@example.org", "adjudicator", actor=ADMIN)
    people.set_role(sessions, "bo@example.org", "reviewer", actor=ADMIN)
    sessions.kw["bind"].dispose()
    yield app_url
    stop()
    provider.stop()


def _person(browser) -> Page:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    signin._loopback_only(context)
    return context.new_page()


def test_two_blind_reviewers_a_dispute_and_an_adjudication(team, browser):
    url = team
    ana, bo = _person(browser), _person(browser)
    judge_score = _score(0)

    _sign_in(ana, url, "ana")
    ana.set_viewport_size({"width": 1400, "height": 500})  # short: the page scrolls
    # keys act once the verdict form's script is in the page (its focus line is drawn)
    expect(ana.locator(".rw-where").first).to_be_visible(timeout=45_000)
    for key in ("m", "m"):  # MET, MET on q0 by keyboard
        ana.keyboard.press(key)
        _idle(ana)
    _scroll_to_the_bottom(ana)  # down at the Save buttons, as after answering
    assert ana.evaluate(_SCROLLED) > 100
    ana.keyboard.press("Control+Enter")  # save and next
    _idle(ana)
    expect(ana.get_by_text("2 of 2").first).to_be_visible(timeout=20_000)
    # the next response opens at its top
    ana.wait_for_function(f"() => ({_SCROLLED})() === 0", timeout=10_000)
    expect(ana.get_by_role("heading", name="Review", exact=True)).to_be_in_viewport()
    ana.set_viewport_size({"width": 1400, "height": 1000})

    _sign_in(bo, url, "bo")
    expect(bo.get_by_text("q0 ·").first).to_be_visible()
    # blind to each other: Ana's verdicts are hidden from Bo until he has answered
    expect(bo.get_by_text("Other reviewers' verdicts are hidden until you save yours")
           ).to_have_count(2)
    expect(bo.get_by_text("Ana: MET")).to_have_count(0)
    bo.get_by_role("textbox", name="Note (optional)").nth(1).fill("no source is named")
    bo.get_by_role("heading", name="Review", exact=True).click()  # the note is kept on blur
    _idle(bo)
    bo.keyboard.press("m")
    _idle(bo)
    bo.keyboard.press("u")
    _idle(bo)
    bo.get_by_role("button", name="Save", exact=True).click()
    _idle(bo)
    expect(bo.get_by_text("Saved 2 verdicts")).to_be_visible(timeout=20_000)
    expect(bo.get_by_text("disputed — the judge's verdict stands").first).to_be_visible()
    expect(bo.get_by_text("Ana: MET").first).to_be_visible()
    _shot(bo, "reviewers-bo-after-saving")

    # the dispute is not applied: the judge's verdict stands, the score is the judge's
    assert _score(0) == judge_score
    # q0 now has its two reviewers: the review set's counts follow on both pages, with no
    # reload (Ana's page has not been drawn again since her save).
    for person in (bo, ana):
        expect(person.get_by_text("2 reviewers per response · 1 of 2 responses have them")
               ).to_be_visible(timeout=20_000)

    ana.get_by_text("Adjudicate", exact=True).click()
    _idle(ana)
    expect(ana.get_by_text("1 disputed criterion in this set")).to_be_visible(timeout=20_000)
    expect(ana.get_by_text("Bo: UNMET").first).to_be_visible()
    expect(ana.get_by_text("no source is named")).to_be_visible()
    _shot(ana, "reviewers-adjudication")
    ana.get_by_role("radiogroup", name="Adjudicated verdict").get_by_text(
        "UNMET", exact=True).click()
    ana.get_by_role("textbox", name="Why (shown to the reviewers)").fill("no source")
    ana.get_by_role("button", name="Decide").click()
    _idle(ana)
    expect(ana.get_by_text("Nothing to adjudicate")).to_be_visible(timeout=20_000)
    # only now the effective score changes: (10 + 0) / 15
    assert _score(0) == 10 / 15 and judge_score == 1.0

    ana.goto(f"{url}/agreement")
    open_section(ana, "Human baseline")
    expect(ana.get_by_role("heading", name="Human baseline")).to_be_visible(timeout=45_000)
    expect(ana.get_by_text("Is each judge as good as a second person?")).to_be_visible()
    # the grid first; each judge's figures in words are folded under it
    ana.get_by_text("Every figure, and each judge in words").click()
    expect(ana.get_by_text("the people's macro-F1").first).to_be_visible(timeout=20_000)
    expect(ana.get_by_text("Traceback")).to_have_count(0)
    ana.get_by_role("heading", name="Human baseline").scroll_into_view_if_needed()
    ana.wait_for_timeout(1500)
    _shot(ana, "reviewers-agreement")
