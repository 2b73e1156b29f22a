"""In a real browser: upload two response files, compare them on the Compare page with a judge
served by the fake provider (both orders, over litellm), and read B's win rate, the
position consistency and the row that had no partner."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from grading.types import Criterion
from storage.engine import open_database
from storage.services import comparisons, rubrics
from tests.actors import ADMIN
from tests.e2e.conftest import _serve, database_url_in
from tests.e2e.streamlit_page import choose, no_tracebacks, submit, wait_idle
from tests.e2e.test_journey import _type
from tests.fake_provider import FakeProvider

# The fake judge prefers the answer with more words: the candidate is longer on a1 and a2,
# shorter on a3; a4 is only in the baseline.
BASELINE = (b"id,query,response\n"
            b"a1,Where is my refund?,In a week.\n"
            b"a2,Can I return shoes?,Yes.\n"
            b"a3,Do you ship abroad?,We ship to every country in the European Union.\n"
            b"a4,Is it open today?,Yes.\n")
CANDIDATE = (b"id,query,response\n"
             b"a1,Where is my refund?,Refunds take 5 to 7 business days.\n"
             b"a2,Can I return shoes?,Yes within 30 days of delivery.\n"
             b"a3,Do you ship abroad?,Yes.\n")


@pytest.fixture(scope="module")
def provider():
    fake = FakeProvider().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def app(tmp_path_factory, provider):
    data_dir = tmp_path_factory.mktemp("compare-uploads")
    sessions = open_database(database_url_in(data_dir))
    rubrics.create_rubric(sessions, "Support replies", [
        Criterion(name="helpful", requirement="Answers the question", weight=4),
        Criterion(name="rude", requirement="Blames the customer", weight=-2)], actor=ADMIN)
    url, stop = _serve(data_dir, {"RUBRIC_WORKBENCH_API_KEY": "compare-test-key"})
    yield url, sessions
    stop()


def _upload(page: Page, url: str, path) -> None:
    page.goto(f"{url}/responses")
    expect(page.get_by_role("heading", name="Responses", exact=True)).to_be_visible(
        timeout=45_000)
    wait_idle(page)
    tab = page.get_by_role("tab", name="Upload a file")
    if tab.count():  # once a dataset exists, uploading is one of its tabs
        tab.click()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(
        str(path))
    rows = BASELINE.count(b"\n") - 1 if path.stem == "baseline" else CANDIDATE.count(b"\n") - 1
    expect(page.get_by_text(f"All {rows} rows are valid.")).to_be_visible(timeout=60_000)
    wait_idle(page)
    imported = page.get_by_text(f"Imported {rows} responses from {path.name}")
    submit(page, page.get_by_role("button", name=f"Import {rows} responses"), imported)
    no_tracebacks(page)


def test_two_uploads_are_compared_and_the_win_rate_is_read_on_the_page(
        page: Page, app, provider, tmp_path, screenshot):
    url, sessions = app
    for name, data in (("baseline", BASELINE), ("candidate", CANDIDATE)):
        path = tmp_path / f"{name}.csv"
        path.write_bytes(data)
        _upload(page, url, path)

    page.goto(f"{url}/compare")
    expect(page.get_by_role("heading", name="Compare", exact=True)).to_be_visible(
        timeout=45_000)
    choose(page, "Source A (the baseline)", "baseline")
    choose(page, "Source B (compared with A)", "candidate")
    _type(page, "Judge model", "openai/fake-judge")
    _type(page, "API base (optional)", provider.api_base)
    start = page.get_by_role("button", name="Start comparison")
    expect(start).to_be_enabled(timeout=30_000)
    # The picker of comparisons stays once there is one; the "started" message goes with the
    # rerun that follows the end of the comparison, which can come before this looks.
    submit(page, start, page.get_by_role("combobox", name="Comparison"))

    consistency = page.get_by_test_id("stMetric").filter(has_text="Position consistency")
    # The end of the comparison reruns the whole page (its polling part stops): until that
    # run ends, the polling part's last metrics may still show beside the new ones (two of
    # each, so the first wait looks at the newest). Once it has ended, each is there once.
    expect(consistency.last).to_contain_text("100%", timeout=90_000)
    wait_idle(page, timeout=60_000)
    expect(consistency).to_have_count(1)
    expect(consistency).to_contain_text("100%")
    win_rate = page.get_by_test_id("stMetric").filter(has_text="B's win rate")
    expect(win_rate).to_have_count(1)
    expect(win_rate).to_contain_text("67%")
    judged = page.get_by_test_id("stMetric").filter(has_text="Pairs judged")
    expect(judged).to_have_count(1)
    expect(judged).to_contain_text("3 of 3")
    expect(page.get_by_text("Not compared")).to_be_visible()
    expect(page.get_by_text("candidate (B) compared with baseline (A) · judge "
                            "openai/fake-judge · done · 3/3 pairs")).to_be_visible()
    expect(page.get_by_role("combobox", name="Comparison")).to_have_value(
        "#1 · candidate vs baseline · openai/fake-judge")
    expect(page.get_by_role("button", name="Cancel")).to_have_count(0)
    wait_idle(page)
    no_tracebacks(page)
    screenshot("compare-uploads-1280")

    [made] = comparisons.list_comparisons(sessions)
    assert (made.status, made.done_count, made.unmatched_count) == ("done", 3, 1)
    assert provider.requests == 3 * 2 * 2  # pairs x criteria x both orders
