"""The Review page fits one screen (issue 35 item 12): at 1280x800 and 1920x1080 the response
and the first criterion's controls are in the first viewport, without scrolling; the judges'
verdicts are a compact criterion x judge matrix; adjudication cards show the requirement and
every judge's verdict and reason, and stay where they are after Decide."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from grading.types import Criterion, ScoringSettings, Verdict
from storage.engine import open_database
from storage.services import review_sets, reviews, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.seed import judged_set
from tests.e2e.streamlit_page import no_tracebacks, wait_idle
from tests.storage.helpers import judge_report

M, U = Verdict.MET, Verdict.UNMET
CRITERIA = [
    Criterion(name="Adult dose stated", requirement="States the usual adult dose of ibuprofen "
              "(200-400 mg every 4-6 hours) with the maximum daily amount", weight=10),
    Criterion(name="Authoritative source named", requirement="Names an authoritative source "
              "for the dose, such as the package leaflet or a national formulary", weight=5),
    Criterion(name="Stomach and kidney warnings", requirement="Warns about stomach bleeding "
              "and kidney risk for long use", weight=5),
    Criterion(name="Advice to see a doctor", requirement="Advises to see a doctor if pain "
              "lasts more than ten days", weight=3),
    Criterion(name="Plain calm tone", requirement="Is written in plain, calm language", weight=1),
]
SIZES = [(1280, 800), (1920, 1080)]
SEEDED: dict[str, object] = {}


def _seed(url: str) -> None:
    sessions = open_database(url)
    seeded = judged_set(sessions, CRITERIA, 3)
    version, dataset, responses = seeded.version, seeded.dataset, seeded.responses
    # a second judge that disagrees on two criteria
    second = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                             grader="per_criterion", model="openai/second-judge", actor=ADMIN)
    for response in responses:
        report = judge_report(CRITERIA, [M, U, M, U, M], ScoringSettings(), response.output)
        runs.record_grade(sessions, second.id, response.id, report.model_copy(update={
            "report": [c.model_copy(update={"reason": f"second judge's {c.reason}"})
                       for c in report.report]}))
    runs.start_run(sessions, second.id, worker="seed")
    runs.finish_run(sessions, second.id)
    review_sets.update_settings(sessions, actor=ADMIN, dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=2)
    # two reviewers disagree on "Source" and "Doctor" of q0, and on "Source" of q1
    ids = [c.id for c in version.criteria]
    for name, verdict in (("Ann Lee", M), ("Bo Chen", U)):
        actor = local_actor(name)
        for response, criteria in ((responses[0], (1, 3)), (responses[1], (1,))):
            reviews.save_review(sessions, actor=actor, response_id=response.id, verdicts={
                ids[i]: (verdict, f"{name} thinks {verdict.value}") for i in criteria})
    # on q2 both say UNMET where the first judge said MET: the judges get those wrong
    for name in ("Ann Lee", "Bo Chen"):
        reviews.save_review(sessions, actor=local_actor(name), response_id=responses[2].id,
                            verdicts={ids[i]: (U, "") for i in range(len(ids))})
    SEEDED.update(url=url, version=version.id, criteria=ids,
                  responses=[r.id for r in responses])
    sessions.kw["bind"].dispose()


@pytest.fixture(scope="module")
def review_app(seeded_app_server):
    return seeded_app_server(_seed)


def _shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))  # the first screen only


def _open_review(page: Page, url: str, width: int, height: int) -> None:
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{url}/review")
    expect(page.get_by_role("heading", name="Review", exact=True)).to_be_visible(
        timeout=45_000)
    expect(page.get_by_text(re.compile(r"1 of 3")).first).to_be_visible(timeout=30_000)
    wait_idle(page)


def _inside_first_screen(page: Page, locator, what: str, height: int) -> None:
    box = locator.bounding_box()
    assert box is not None, f"{what} is not drawn"
    assert box["y"] >= 0 and box["y"] + box["height"] <= height, (
        f"{what} is at y={box['y']:.0f}..{box['y'] + box['height']:.0f}, "
        f"outside the first {height} px")


@pytest.mark.parametrize(("width", "height"), SIZES, ids=lambda v: str(v))
def test_the_response_and_the_first_criterion_fit_the_first_screen(
        review_app, page: Page, width: int, height: int):
    _open_review(page, review_app, width, height)
    _shot(page, f"review-first-screen-{width}x{height}")
    output = page.get_by_text("answer 0", exact=True).first
    _inside_first_screen(page, output, "the response's output", height)
    first = page.locator(".rw-criterion").first
    _inside_first_screen(page, first.get_by_role("radiogroup"),
                         "the first criterion's verdict buttons", height)
    _inside_first_screen(page, first.get_by_role("textbox"), "the first criterion's note",
                         height)
    no_tracebacks(page)


_CUT = """(root) => [...root.querySelectorAll(
        'button, button *, [role="tab"], [role="tab"] *, [data-testid="stPageLink"] *')]
    .filter(e => {
        const style = getComputedStyle(e);
        const clips = style.textOverflow === 'ellipsis' || style.overflow === 'hidden'
            || style.overflowX === 'hidden';
        return clips && e.innerText && e.innerText.trim() && e.scrollWidth > e.clientWidth + 1;
    })
    .map(e => e.innerText.trim())"""


def cut_labels(page: Page) -> list[str]:
    """The texts of buttons drawn narrower than their label (cut with an ellipsis)."""
    return page.locator('[data-testid="stMain"]').evaluate(_CUT)


@pytest.mark.parametrize(("width", "height"), SIZES, ids=lambda v: str(v))
def test_no_button_label_on_review_is_cut(review_app, page: Page, width: int, height: int):
    _open_review(page, review_app, width, height)
    expect(page.locator(".st-key-review_prev button")).to_contain_text("Previous")
    assert cut_labels(page) == []


def _card(page: Page, response: int, criterion: int):
    rid, cid = SEEDED["responses"][response], SEEDED["criteria"][criterion]
    return page.locator(f".st-key-review_adj_{rid}_{cid}")


def test_adjudication_cards_show_the_requirement_every_judge_and_stay_in_place_after_decide(
        review_app, page: Page):
    _open_review(page, review_app, 1280, 800)
    page.get_by_text("Adjudicate", exact=True).click()
    wait_idle(page)
    first, second, third = _card(page, 0, 1), _card(page, 0, 3), _card(page, 1, 1)
    expect(first).to_be_visible(timeout=30_000)
    for card, index in ((first, 1), (second, 3), (third, 1)):
        # the requirement, both reviewers' verdicts and notes, both judges' verdicts and reasons
        expect(card.get_by_text(CRITERIA[index].requirement)).to_be_visible()
        for name, verdict in (("Ann Lee", "MET"), ("Bo Chen", "UNMET")):
            expect(card.get_by_text(f"{name} thinks {verdict}", exact=True)).to_be_visible()
        expect(card.get_by_text(f"reason {index}", exact=True)).to_be_visible()
        expect(card.get_by_text(f"second judge's reason {index}", exact=True)).to_be_visible()
        expect(card.get_by_text("#1 Per criterion · judge")).to_be_visible()
        expect(card.get_by_text("#2 Per criterion · second-judge")).to_be_visible()
    _shot(page, "review-adjudication-1280x800")
    before = [c.bounding_box() for c in (first, second, third)]
    first.locator('[data-testid="stRadio"]').get_by_text("UNMET", exact=True).click()
    first.get_by_role("textbox", name="Why (shown to the reviewers)").fill("no source named")
    first.get_by_role("button", name="Decide", exact=True).click()
    wait_idle(page)
    # the decided card is still there, where it was, with the decision; the others too
    expect(first.get_by_text(re.compile(r"decided by .* — “no source named”"))).to_be_visible(
        timeout=30_000)
    expect(first.get_by_role("button", name="Decide again")).to_be_visible()
    after = [c.bounding_box() for c in (first, second, third)]
    _shot(page, "review-adjudication-decided-1280x800")
    assert [round(b["y"]) for b in after[1:]] == pytest.approx(
        [round(b["y"]) for b in before[1:]], abs=4), (before, after)
    assert abs(after[0]["y"] - before[0]["y"]) < 2
    sessions = open_database(SEEDED["url"])
    try:
        history = reviews.verdict_history(sessions, SEEDED["responses"][0])
    finally:
        sessions.kw["bind"].dispose()
    decided = [h for h in history if h.adjudication]
    assert [(h.criterion_id, h.verdict.value, h.note) for h in decided] == [
        (SEEDED["criteria"][1], "UNMET", "no source named")]
    no_tracebacks(page)


@pytest.mark.parametrize("path", ["", "agreement", "results", "judges"])
def test_no_button_label_is_cut_at_1280(review_app, page: Page, path: str):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{review_app}/{path}")
    expect(page.locator('[data-testid="stMainBlockContainer"]')).to_be_visible(timeout=45_000)
    page.wait_for_timeout(1500)
    wait_idle(page)
    if path == "agreement":  # the worst criteria's "Reword" buttons, long labels
        expect(page.get_by_role("button", name=re.compile("^Reword"))).not_to_have_count(0)
    page.screenshot(path=str(SCREENSHOTS / f"cut-labels-{path or 'start'}-1280x800.png"),
                    full_page=True)
    assert cut_labels(page) == []


def test_the_start_pages_next_step_is_not_cut_at_1280(seeded_app_server, page: Page):
    # an empty app of its own: loading the sample into the shared empty one (app_server)
    # broke the empty-state checks of a test run after it on the same worker
    url = seeded_app_server(lambda _database_url: None)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(url)
    button = page.get_by_role("button", name="Load sample rubric and responses")
    expect(button).to_be_visible(timeout=45_000)
    wait_idle(page)
    button.click()
    expect(page.get_by_text("Next step", exact=True)).to_be_visible(timeout=30_000)
    wait_idle(page)
    page.screenshot(path=str(SCREENSHOTS / "cut-labels-start-next-step-1280x800.png"))
    links = page.locator('[data-testid="stPageLink"]')
    expect(links.filter(has_text="Grade the sample")).to_be_visible()
    assert cut_labels(page) == []
