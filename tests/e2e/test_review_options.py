"""A Likert criterion reviewed by keyboard in a real browser (issue 34): number keys pick the
criterion's options, the database holds the chosen labels, and a reload and a second tab
start from what is stored (a stale tab's save is refused, not written over the other)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from grading.types import EvaluationReport
from storage.engine import open_database
from storage.services import datasets, reviews, rubrics, runs
from tests.actors import ADMIN
from tests.e2e.streamlit_page import no_tracebacks, wait_idle
from tests.kinds import MIXED, judge_report

CRITERIA = MIXED
JUDGE = ["MET", "Fair", "formal"]
SEEDED: dict[str, object] = {}


def _report() -> EvaluationReport:
    return judge_report(JUDGE, score=0.5)


def _seed(url: str) -> None:
    sessions = open_database(url)
    version = rubrics.create_rubric(sessions, "Mixed", CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"q{i}", "query": f"question {i}", "text": f"answer {i}"} for i in range(2)],
        actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/judge", actor=ADMIN)
    for response in responses:
        runs.record_grade(sessions, run.id, response.id, _report())
    runs.start_run(sessions, run.id, worker="seed")
    runs.finish_run(sessions, run.id)
    SEEDED.update(url=url, criteria=[c.id for c in version.criteria],
                  responses={r.external_id: r.id for r in responses})
    sessions.kw["bind"].dispose()


@pytest.fixture(scope="module")
def options_app(seeded_app_server):
    return seeded_app_server(_seed)


def _stored(external_id: str) -> dict[int, list[tuple[str, str | None]]]:
    """Per criterion index, every (verdict, option) saved on the response, in order."""
    sessions = open_database(SEEDED["url"])
    try:
        history = reviews.verdict_history(sessions, SEEDED["responses"][external_id])
    finally:
        sessions.kw["bind"].dispose()
    index = {cid: i for i, cid in enumerate(SEEDED["criteria"])}
    stored: dict[int, list[tuple[str, str | None]]] = {}
    for h in sorted(history, key=lambda h: h.id):
        stored.setdefault(index[h.criterion_id], []).append((h.verdict.value, h.option))
    return stored


def _wait_stored(page: Page, external_id: str, count: int):
    for _ in range(150):  # up to 30 s
        stored = _stored(external_id)
        if sum(len(v) for v in stored.values()) >= count:
            return stored
        page.wait_for_timeout(200)
    return _stored(external_id)


def _open(page: Page, url: str, external_id: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{url}/review")
    expect(page.get_by_role("heading", name="Review", exact=True)).to_be_visible(
        timeout=45_000)
    expect(page.get_by_text(re.compile(r" of \d+ · q\d · ")).first).to_be_visible(
        timeout=30_000)
    wait_idle(page)
    # two responses: the one wanted is the one shown, or the next (clicked once, then waited
    # for: a second click before the page redrew would skip past it)
    header = page.get_by_text(re.compile(r" of \d+ · q\d · ")).first.inner_text()
    if f" · {external_id} · " not in header:
        page.locator(".st-key-review_next button").click()
    expect(page.get_by_text(re.compile(rf" of \d+ · {external_id} · ")).first).to_be_visible(
        timeout=30_000)
    wait_idle(page)
    page.get_by_role("heading", name="Review", exact=True).click()  # focus off any input


def _checked(page: Page, criterion: int) -> str | None:
    group = page.get_by_role("radiogroup", name="Your verdict").nth(criterion)
    return group.evaluate("g => g.querySelector('input:checked')?.value ?? null")


def test_a_likert_criterion_is_reviewed_by_number_keys_and_the_labels_are_stored(
        options_app, page: Page, screenshot):
    _open(page, options_app, "q0")
    where = page.locator(".rw-where")
    expect(where).to_have_text("In focus: 1 of 3 · accurate — M / U / N answer it")
    page.keyboard.press("m")
    expect(where).to_have_text("In focus: 2 of 3 · clarity — 1 / 2 / 3 / 4 / 5 / N answer it")
    # the options are the key buttons, numbered, with their values
    keys = page.locator(".rw-keys .rw-answers .rw-button")
    expect(keys).to_have_text(["Poor · 01", "Fair · 0.252", "Good · 0.53",
                               "Very good · 0.754", "Excellent · 15", "CANNOT ASSESSN"])
    page.keyboard.press("4")
    expect(page.locator(".rw-keys .rw-status")).to_have_text(
        "Very good · 0.75 → clarity; focus on tone")
    # the NA option is marked as such, on its button and in the criterion's box
    expect(page.locator('.rw-keys .rw-button[data-na="true"]')).to_have_text("no text · NA3")
    expect(page.locator('.rw-criterion .rw-choice[data-na="true"]')).to_have_count(1)
    page.keyboard.press("3")
    # the judge's choices show as labels
    expect(page.get_by_text("Fair", exact=True).first).to_be_visible()
    full = screenshot("review-options-typed")  # the whole page; then the 1280x800 view
    page.screenshot(path=str(full.with_name("review-options-1280x800.png")))
    page.keyboard.press("Control+Enter")  # save and open the next
    stored = _wait_stored(page, "q0", 3)
    assert stored == {0: [("MET", None)], 1: [("MET", "Very good")],
                      2: [("CANNOT_ASSESS", "no text")]}

    # q1: a digit on a binary criterion does nothing; 9 on a 5-option scale does nothing
    expect(page.get_by_text(re.compile(r"2 of 2 · q1 · ")).first).to_be_visible(timeout=30_000)
    wait_idle(page)
    page.get_by_role("heading", name="Review", exact=True).click()
    page.keyboard.type("2u95", delay=100)
    expect(where).to_have_text(re.compile(r"^In focus: 3 of 3 · tone"))
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved 2 verdicts").first).to_be_visible(timeout=30_000)
    assert _stored("q1") == {0: [("UNMET", None)], 1: [("MET", "Excellent")]}
    no_tracebacks(page)


def test_a_reload_and_a_second_tab_start_from_the_stored_option_and_a_stale_tab_is_refused(
        options_app, page: Page, screenshot):
    _open(page, options_app, "q1")
    assert _checked(page, 1) == "Excellent"  # saved by the test above
    page.reload()
    _open(page, options_app, "q1")
    assert _checked(page, 1) == "Excellent"  # a reload starts from what is stored

    second = page.context.new_page()
    _open(second, options_app, "q1")
    assert _checked(second, 1) == "Excellent"
    second.keyboard.type("j1")  # clarity -> Poor, in the second tab
    second.get_by_role("button", name="Save", exact=True).click()
    expect(second.get_by_text("Saved 1 verdict").first).to_be_visible(timeout=30_000)

    # the first tab still shows Excellent; its change is refused, not written over Poor
    page.get_by_role("heading", name="Review", exact=True).click()
    page.keyboard.type("j3")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text(re.compile("Not saved because you changed them in another "
                                       "window")).first).to_be_visible(timeout=30_000)
    expect(page.get_by_role("radiogroup", name="Your verdict").nth(1)
           .locator("input:checked")).to_have_value("Poor", timeout=30_000)
    assert _stored("q1")[1] == [("MET", "Excellent"), ("MET", "Poor")]
    screenshot("review-options-stale")
    no_tracebacks(page)
    no_tracebacks(second)
    second.close()
