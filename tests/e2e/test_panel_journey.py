"""Browser journey: three judges graded by the app's worker over the fake provider are
combined into a panel on Results, seen in Results and Agreement; the worst criterion is
reworded from Agreement, tried on the reviewed responses and adopted as a new version.

The fake judge's verdict depends on the criterion's text (as in tests/jobs/test_trials.py)
and, for 'polite', on the model, so the panel's members disagree somewhere."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from grading.types import Criterion, Verdict
from storage.engine import open_database
from storage.services import datasets, reviews, rubrics, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.e2e.conftest import _serve, database_url_in
from tests.e2e.streamlit_page import open_section
from tests.fake_provider import FakeProvider, Reply, judge_reply

STRICT = "Gives the correct dose and names its source"
MODELS = ("openai/gpt-4o-mini", "openai/gpt-4o", "openai/gpt-4.1-mini")
SIZES = ((1280, 800), (1920, 1080))


def wording_sensitive_judge(body: dict) -> Reply:
    """'States the dose': every response MET (lenient). The strict wording: MET only where
    the answer is right. 'Is polite': gpt-4o finds the wrong answers impolite."""
    prompt = body["messages"][-1]["content"]
    if "<criterion" not in prompt:
        return judge_reply(body)
    right = re.search(r"answer \d+ is right", prompt) is not None
    if "correct dose and names its source" in prompt:
        verdict, reason = ("MET" if right else "UNMET"), "strict reading"
    elif "Is polite" in prompt and body["model"] == "gpt-4o" and not right:
        verdict, reason = "UNMET", "curt"
    else:
        verdict, reason = "MET", "lenient reading"
    return Reply(json.dumps({"verdict": verdict, "reason": reason}),
                 usage={"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140})


@pytest.fixture(scope="module")
def provider():
    fake = FakeProvider().start()
    fake.default = wording_sensitive_judge
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def panel_server(tmp_path_factory, provider):
    """Six responses, people's verdicts on 'accurate', three queued runs the app grades."""
    data_dir = tmp_path_factory.mktemp("panel-journey")
    db_url = database_url_in(data_dir)
    sessions = open_database(db_url)
    version = rubrics.create_rubric(sessions, "Dosing", [
        Criterion(name="accurate", requirement="States the dose", weight=10),
        Criterion(name="polite", requirement="Is polite", weight=2),
    ], actor=ADMIN)
    rows = [{"id": f"r{i}", "query": f"What dose for case {i}?",
             "text": f"answer {i} is {'right' if i % 2 == 0 else 'wrong'}"} for i in range(6)]
    dataset = datasets.create_dataset(sessions, "Answers", responses=rows, actor=ADMIN)
    for model in MODELS:
        runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                        grader="per_criterion", model=model,
                        settings={"api_base": provider.api_base}, actor=ADMIN)
    accurate = version.criteria[0]
    for index, response in enumerate(datasets.list_responses(sessions, dataset.id, limit=None)):
        reviews.set_human_verdict(
            sessions, response_id=response.id, criterion_id=accurate.id,
            verdict=Verdict.MET if index % 2 == 0 else Verdict.UNMET,
            actor=local_actor("Pat"), note="checked the dose")
    sessions.kw["bind"].dispose()
    url, stop = _serve(data_dir, {"RUBRIC_WORKBENCH_API_KEY": "panel-test-key"})
    yield url, db_url
    stop()


def _wait_idle(page: Page) -> None:
    page.wait_for_timeout(300)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=30_000)
    expect(page.locator('[data-testid="stSkeleton"]')).to_have_count(0, timeout=30_000)
    page.wait_for_timeout(300)


def _no_tracebacks(page: Page) -> None:
    expect(page.get_by_text("Traceback")).to_have_count(0)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def _shots(page: Page, screenshot, name: str, at=None) -> None:
    """Screenshots at each size; ``at``: a locator scrolled to the top of the view first
    (Streamlit scrolls inside its main area, so a full-page shot shows one screen)."""
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        _wait_idle(page)
        if at is not None:
            at.first.evaluate("element => element.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(400)
        screenshot(f"{name}-{width}x{height}")
    page.set_viewport_size({"width": 1280, "height": 800})


def _cut_chips(page: Page, label: str) -> list[str]:
    """The chips of the multiselect labelled ``label`` that are not shown whole: cut by the
    box's edge or with their text ellipsized."""
    box = page.locator('[data-testid="stMultiSelect"]').filter(has_text=label)
    return box.evaluate("""element => {
        const shown = element.querySelector('.react-aria-ComboBox');
        const edge = shown.querySelector('[data-testid="stMultiSelectTagsContainer"]')
            .getBoundingClientRect();
        return [...shown.querySelectorAll('[data-tag]')].filter(tag => {
            const r = tag.getBoundingClientRect();
            const text = tag.querySelector('span[title]');
            return r.right > edge.right + 0.5 || r.left < edge.left - 0.5
                || text.scrollWidth > text.clientWidth + 1;
        }).map(tag => tag.textContent);
    }""")


def data_dir_of(db_url: str):
    from pathlib import Path

    return Path(db_url.removeprefix("sqlite:///")).parent


def _wait_graded(db_url: str) -> None:
    sessions = open_database(db_url)
    deadline = time.monotonic() + 120
    while True:
        found = runs.list_runs(sessions)
        if all(r.status == "done" for r in found) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    sessions.kw["bind"].dispose()
    assert [(r.status, r.graded_count, r.failed_count) for r in found] == [
        ("done", 6, 0)] * 3, [r.error for r in found]


def test_build_a_panel_compare_it_reword_try_and_adopt(panel_server, provider, page: Page,
                                                       screenshot):
    url, db_url = panel_server
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{url}/results")  # opening Results starts the app's worker
    expect(page.get_by_role("heading", name="Results", exact=True)).to_be_visible(
        timeout=45_000)
    _wait_graded(db_url)
    name = page.get_by_role("textbox", name="Your name (reviewer)")
    name.fill("Ana")
    name.press("Enter")
    page.reload()
    expect(page.get_by_text("Showing 1–6 of 6 matching responses.")).to_be_visible(
        timeout=45_000)
    _wait_idle(page)

    # Combine the three runs shown into a panel, on Results.
    page.get_by_role("button", name="Combine as a panel").click()
    expect(page.get_by_role("dialog")).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Create panel").click()
    expect(page.get_by_text("Created panel 1 (majority of 3): it is shown next to the "
                            "runs.")).to_be_visible(timeout=30_000)
    _wait_idle(page)
    expect(page.get_by_role("dialog")).to_have_count(0, timeout=30_000)
    table_note = page.get_by_text("Judge panels are columns like the runs")
    expect(table_note).to_be_visible()
    _no_tracebacks(page)
    _shots(page, screenshot, "results-panel-top")
    for width, height in SIZES:  # every run's chip whole: grader and model readable
        page.set_viewport_size({"width": width, "height": height})
        _wait_idle(page)
        assert _cut_chips(page, "Runs to compare") == [], (width, height)
    page.set_viewport_size({"width": 1280, "height": 800})
    _shots(page, screenshot, "results-panel", at=page.get_by_text("Showing 1–6 of 6"))
    # A row's dialog: the panel's verdict per criterion, how it was reached, its members.
    grid = page.locator('[data-testid="stDataFrame"]').first
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 16, box["y"] + 35 + 35 * 1 + 17)  # r1, under the header
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_text("panel 1 (majority of 3)")).to_be_visible(timeout=30_000)
    # people's UNMET on 'accurate' moves the panel's 1.000 to 0.167
    expect(dialog.get_by_text(re.compile(r"effective score 0\.167 · panel 1\.000"))
           ).to_be_visible()
    _wait_idle(page)
    screenshot("results-panel-detail")
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0, timeout=20_000)

    # Results' exports carry the panel like a run: its record per response after the runs',
    # and a column of its effective scores in "This table (CSV)".
    page.get_by_role("button", name=re.compile(r"Export$")).click()
    with page.expect_download(timeout=60_000) as download:
        page.get_by_role("button", name="Results JSONL").click()
    records = [json.loads(line) for line in
               Path(download.value.path()).read_text(encoding="utf-8").splitlines()]
    panel_rows = [r for r in records if r["grader"] == "panel"]
    assert len(records) == 3 * 6 + 6 and [r["panel_id"] for r in panel_rows] == [1] * 6
    assert all(r["member_runs"] == "1 2 3" for r in panel_rows)
    with page.expect_download(timeout=60_000) as download:
        page.get_by_role("button", name="This table (CSV)").click()
    header = Path(download.value.path()).read_text(encoding="utf-8").splitlines()[0]
    assert "panel1_majority_effective_score" in header.split(","), header
    page.keyboard.press("Escape")
    _wait_idle(page)

    # Review: under the judges, the panel's verdict and its members (the judges above).
    page.goto(f"{url}/review")
    members = page.get_by_text("Members: #1, #2, #3 (verdicts above)").first
    expect(members).to_be_visible(timeout=45_000)
    _wait_idle(page)
    _no_tracebacks(page)
    members.evaluate("element => element.scrollIntoView({block: 'center'})")
    page.wait_for_timeout(400)
    screenshot("review-panel")
    # The three judges' badges sit on one line though "gpt-4o-mini" wraps at 1280 px and
    # "gpt-4o" does not (the verdict is drawn before the judge's label).
    tops = []
    for label in ("#1 Per criterion · gpt-4o-mini", "#2 Per criterion · gpt-4o",
                  "#3 Per criterion · gpt-4.1-mini"):
        column = page.get_by_text(label, exact=True).first.locator(
            "xpath=ancestor::div[@data-testid='stColumn'][1]")  # on the first criterion
        tops.append(column.get_by_text("MET", exact=True).first.bounding_box()["y"])
    assert max(tops) - min(tops) < 2, tops

    # Agreement: the panel next to its members, member agreement, the worst criterion.
    page.goto(f"{url}/agreement")
    open_section(page, "Judges and cost")
    expect(page.get_by_role("heading", name="Judge panels next to their members")).to_be_visible(
        timeout=45_000)
    expect(page.get_by_text("differently")).to_be_visible()  # 'polite' is flagged
    _wait_idle(page)
    _no_tracebacks(page)
    _shots(page, screenshot, "agreement-panel-top")
    _shots(page, screenshot, "agreement-panel", at=page.get_by_role(
        "heading", name="Judges: agreement next to cost"))

    open_section(page, "Criteria")
    page.get_by_role("button", name="Reword “accurate”").click()
    expect(page.get_by_role("heading", name="Judges", exact=True)).to_be_visible(
        timeout=45_000)
    wording = page.get_by_role("textbox", name="New wording")
    expect(wording).to_have_value("States the dose", timeout=30_000)
    _wait_idle(page)
    wording.fill(STRICT)
    page.get_by_text("Current wording:").click()  # the text area commits on blur
    _wait_idle(page)
    expect(page.get_by_text(re.compile(r"6 reviewed responses · 6 calls"))).to_be_visible(
        timeout=30_000)
    before = provider.requests
    page.get_by_role("button", name="Try it").click()
    try:
        expect(page.get_by_text("Macro-F1, new wording")).to_be_visible(timeout=120_000)
    except AssertionError:
        log = (data_dir_of(db_url) / "streamlit.log").read_text()[-4000:]
        raise AssertionError(f"{provider.requests - before} calls; log:\n{log}") from None
    _wait_idle(page)
    assert provider.requests - before == 6  # only the reworded criterion, once per response
    flipped = page.get_by_test_id("stMetric").filter(has_text="Flipped verdicts")
    expect(flipped.get_by_test_id("stMetricValue")).to_have_text("3")
    # n, kappa before -> after and the bootstrap intervals; each flip with both reasons
    expect(page.get_by_text(re.compile(
        r"n = 6 reviewed responses · kappa \S+ → 1\.00 · current wording: 95% interval .+; "
        r"new wording: 95% interval .+; change: 95% interval .+ \(paired bootstrap"))
    ).to_be_visible()
    flips = page.get_by_test_id("stDataFrame").filter(
        has=page.locator("th", has_text="reason after"))
    expect(flips.locator("td").filter(has_text=re.compile(r"^strict reading$"))).to_have_count(3)
    expect(flips.locator("td").filter(has_text=re.compile(r"^lenient reading$"))).to_have_count(
        3)
    _no_tracebacks(page)
    screenshot("judges-trial")

    page.get_by_text("People's verdicts on this criterion still apply").click()
    _wait_idle(page)
    page.get_by_role("button", name="Adopt: make a new rubric version with this wording").click()
    expect(page.get_by_text(re.compile(r"Adopted as Dosing v2 \(with people's verdicts "
                                       r"carried over\)"))).to_be_visible(timeout=30_000)
    _no_tracebacks(page)
    screenshot("judges-adopted")
    sessions = open_database(db_url)
    [rubric] = rubrics.list_rubrics(sessions)
    latest = rubrics.list_versions(sessions, rubric.id)[-1]
    sessions.kw["bind"].dispose()
    assert latest.number == 2 and latest.criteria[0].requirement == STRICT
