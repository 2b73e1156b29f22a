"""A Likert criterion from authoring to agreement, in a real browser (issue 34's journey).

Turn a MET/UNMET criterion into a Likert 1-5 rating on the Rubrics page -> grade the
responses on the Grade page with a judge over real HTTP (the fake provider picks an option by
what each response says) -> review every response by keyboard, number keys picking options
-> read the quadratic-weighted kappa on the Agreement page, which must equal scikit-learn's on
the same (judge, person) pairs.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import Page, expect
from sklearn.metrics import cohen_kappa_score

from grading.types import Criterion
from storage.engine import open_database
from storage.services import datasets, reviews, rubrics, runs
from tests.actors import ADMIN
from tests.e2e.conftest import _serve, database_url_in
from tests.e2e.grid import Grid
from tests.e2e.streamlit_page import choose, no_tracebacks, wait_idle
from tests.fake_provider import FakeProvider, Reply, judge_reply

LABELS = ["1 - Very poor", "2 - Poor", "3 - Fair", "4 - Good", "5 - Excellent"]
# What each response says about itself: the judge's option (1-based), then the person's key.
RESPONSES = {"r0": (1, "1"), "r1": (2, "3"), "r2": (4, "4"), "r3": (5, "4"), "r4": (3, "3")}


def _judge(body: dict) -> Reply:
    """Rates clarity by the "level N" a response states; MET on the binary criterion."""
    prompt = body["messages"][-1]["content"]
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    labels = ((schema.get("properties") or {}).get("option") or {}).get("enum")
    if not labels:
        return judge_reply(body)
    level = int(re.search(r"level (\d)", prompt.split("<response>")[1]).group(1))
    label = next(lab for lab in labels if lab.startswith(f"{level} - "))
    return Reply(json.dumps({"reason": f"reads as level {level}", "option": label}))


@pytest.fixture(scope="module")
def provider():
    fake = FakeProvider().start()
    fake.default = _judge
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def likert_app(tmp_path_factory, provider):
    data_dir = tmp_path_factory.mktemp("likert-journey")
    db_url = database_url_in(data_dir)
    sessions = open_database(db_url)
    rubrics.create_rubric(sessions, "Refund replies", [
        Criterion(name="clarity", requirement="Explains the refund steps clearly", weight=10),
        Criterion(name="order", requirement="Asks for the order number", weight=5),
    ], actor=ADMIN)
    datasets.create_dataset(sessions, "Replies", responses=[
        {"id": rid, "query": "Where is my refund?",
         "text": f"Reply {rid}: written at clarity level {level}."}
        for rid, (level, _) in RESPONSES.items()], actor=ADMIN)
    sessions.kw["bind"].dispose()
    url, stop = _serve(data_dir, {"RUBRIC_WORKBENCH_API_KEY": "likert-test-key"})
    yield url, db_url
    stop()


def _author(page: Page, url: str) -> None:
    page.goto(f"{url}/rubrics")
    expect(page.get_by_role("heading", name="Refund replies")).to_be_visible(timeout=45_000)
    wait_idle(page)
    Grid(page, ".st-key-rubrics_criteria").edit("Judged as", 0, "rating")
    wait_idle(page)
    expect(page.get_by_text("Row 1 · clarity · rating options")).to_be_visible(timeout=30_000)
    choose(page, "Preset", "Likert 1-5")
    page.get_by_role("button", name="Use preset").click()
    wait_idle(page)
    page.get_by_role("button", name="Save criteria").click()
    expect(page.get_by_text(re.compile(r"^Saved 2 criteria in version \d"))).to_be_visible(
        timeout=30_000)
    no_tracebacks(page)


def _grade(page: Page, url: str, db_url: str, provider: FakeProvider) -> None:
    page.goto(f"{url}/grade")
    expect(page.get_by_role("heading", name="Grade", exact=True)).to_be_visible(
        timeout=45_000)
    wait_idle(page)
    for label, value in (("Other models (litellm names, comma-separated)", "openai/likert"),
                         ("api_base for these models (optional)", provider.api_base)):
        field = page.get_by_role("textbox", name=label, exact=True)
        field.fill(value)
        field.press("Enter")
        wait_idle(page)
    launch = page.get_by_role("button", name=re.compile(r"^Launch 1 run"))
    expect(launch).to_be_enabled(timeout=60_000)
    launch.click()
    expect(page.get_by_text("Queued 1 run")).to_be_visible(timeout=60_000)
    sessions = open_database(db_url)
    deadline = time.monotonic() + 240  # a loaded machine
    while time.monotonic() < deadline:
        [run] = runs.list_runs(sessions)
        if run.status == "done":
            break
        time.sleep(0.5)
    sessions.kw["bind"].dispose()
    assert (run.status, run.graded_count, run.failed_count) == ("done", 5, 0), run.error
    assert provider.requests >= 10  # 5 responses x 2 criteria


def _review_all(page: Page, url: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{url}/review")
    expect(page.get_by_role("heading", name="Review", exact=True)).to_be_visible(
        timeout=45_000)
    where = page.locator(".rw-where")
    for number in range(1, len(RESPONSES) + 1):
        header = page.get_by_text(re.compile(rf"^{number} of {len(RESPONSES)} · r\d · "))
        expect(header.first).to_be_visible(timeout=30_000)
        wait_idle(page)
        rid = re.search(r" · (r\d) · ", header.first.inner_text()).group(1)
        page.get_by_role("heading", name="Review", exact=True).click()  # focus off inputs
        expect(where).to_have_text(re.compile(r"^In focus: 1 of 2 · clarity"))
        page.keyboard.press(RESPONSES[rid][1])  # the rating, by its number key
        expect(where).to_have_text(re.compile(r"^In focus: 2 of 2 · order"))
        page.keyboard.press("m")
        page.keyboard.press("Control+Enter")  # save and open the next
        if number == len(RESPONSES):
            expect(page.get_by_text(re.compile(r"^Saved 2 verdicts")).first).to_be_visible(
                timeout=30_000)
    no_tracebacks(page)


def _stored_pairs(db_url: str) -> tuple[list[int], list[int]]:
    """(judge, person) option indexes on clarity, per response, read from the database."""
    sessions = open_database(db_url)
    try:
        [run] = runs.list_runs(sessions)
        [rubric] = rubrics.list_rubrics(sessions)
        clarity = rubrics.latest_version(sessions, rubric.id).criteria[0]
        judge: list[int] = []
        person: list[int] = []
        grades = {g.response_id: g for g in runs.list_grades(sessions, run.id)}
        for response_id, grade in sorted(grades.items()):
            chosen = next(c.choice for c in grade.criteria if c.criterion_id == clarity.id)
            history = [h for h in reviews.verdict_history(sessions, response_id)
                       if h.criterion_id == clarity.id]
            judge.append(LABELS.index(chosen))
            person.append(LABELS.index(history[-1].option))
    finally:
        sessions.kw["bind"].dispose()
    return judge, person


def test_a_likert_criterion_from_authoring_to_weighted_kappa(likert_app, provider,
                                                            page: Page, screenshot):
    url, db_url = likert_app
    page.set_viewport_size({"width": 1280, "height": 800})
    _author(page, url)
    _grade(page, url, db_url, provider)
    _review_all(page, url)

    # "Saved 2 verdicts" is also what the save before the last one said: the last save may
    # still be on its way when the page shows it. Wait (up to 30 s) until it is stored.
    deadline = time.monotonic() + 30
    while True:
        try:
            judge, person = _stored_pairs(db_url)
            break
        except IndexError:  # a response with no verdict on clarity yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    assert judge == [level - 1 for level, _ in RESPONSES.values()]
    assert person == [int(key) - 1 for _, key in RESPONSES.values()]
    expected = cohen_kappa_score(judge, person, weights="quadratic")

    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(f"{url}/agreement")
    expect(page.get_by_role("heading", name="Per criterion, worst first")).to_be_visible(
        timeout=45_000)
    wait_idle(page)
    table = page.locator('[data-testid="stDataFrame"]').filter(
        has=page.locator('th[role="columnheader"]', has_text="Metric"))
    expect(table).to_have_count(1, timeout=30_000)
    headers = [t.strip() for t in table.locator('th[role="columnheader"]').all_inner_texts()]
    # The grid's accessible table: one td#glide-cell-<column>-<row> per cell, columns counted
    # from 0 (a table without its index has no row-marker column).
    names = [table.locator(f"#glide-cell-{headers.index('Criterion')}-{i}").inner_text()
             .strip() for i in range(table.locator('tbody tr[role="row"]').count())]
    assert "clarity" in names, (headers, names)
    row = names.index("clarity")
    metric = table.locator(f"#glide-cell-{headers.index('Metric')}-{row}").inner_text()
    kappa = table.locator(f"#glide-cell-{headers.index('κ')}-{row}").inner_text()
    assert metric.strip() == "quadratic-weighted kappa"
    assert float(kappa) == pytest.approx(expected, abs=0.0051)  # shown to 2 decimals
    screenshot("likert-journey-agreement")
    no_tracebacks(page)
