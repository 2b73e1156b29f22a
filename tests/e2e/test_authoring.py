"""In a real browser: write a rubric with a penalty, upload responses, and every authoring page."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from storage.engine import open_database
from storage.model_presets import add_model_preset
from storage.services import datasets, rubrics
from tests.actors import ADMIN
from tests.e2e.grid import Grid
from tests.e2e.streamlit_page import submit

ROOT = Path(__file__).resolve().parents[2]
CSV = (b"id,query,response\n"
       b"a1,Where is my refund?,Refunds take 5 to 7 business days. What is your order number?\n"
       b"a2,Where is my refund?,You should have read the policy.\n"
       b"a3,Can I return shoes?,Yes within 30 days.\n")


def _wait_idle(page: Page) -> None:
    """Until Streamlit has finished the rerun (the app says so; no skeletons left)."""
    page.wait_for_timeout(300)
    app = page.locator('[data-testid="stApp"]')
    for busy in ("running", "rerunRequested"):
        expect(app).not_to_have_attribute("data-test-script-state", busy, timeout=30_000)
    expect(page.locator('[data-testid="stSkeleton"]')).to_have_count(0, timeout=30_000)
    page.wait_for_timeout(300)


def _no_tracebacks(page: Page) -> None:
    expect(page.get_by_text("Traceback")).to_have_count(0)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def test_write_a_rubric_with_a_penalty_and_upload_responses(seeded_app_server, page: Page,
                                                            screenshot, tmp_path):
    database = {}
    url = seeded_app_server(lambda db_url: database.setdefault("url", db_url))
    page.set_viewport_size({"width": 1400, "height": 1800})

    page.goto(f"{url}/rubrics")
    expect(page.get_by_role("heading", name="Rubrics", exact=True)).to_be_visible(
        timeout=45_000)
    expect(page.get_by_text("No rubrics yet")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("Refund replies")
    page.get_by_label("Requirement").fill("States the refund window")
    page.get_by_role("button", name="Create rubric").click()
    expect(page.get_by_text("Created 'Refund replies'")).to_be_visible(timeout=20_000)
    # A fresh load: without the one-time message, nothing moves the grid between edits.
    page.goto(f"{url}/rubrics")
    expect(page.get_by_role("heading", name="Refund replies")).to_be_visible(timeout=45_000)
    _wait_idle(page)

    # Add a penalty in the criteria table: requirement, negative weight, name, section. Each
    # edit is confirmed twice: by the grid's own cell and by what the page computes from it.
    grid = Grid(page, ".st-key-rubrics_criteria")
    grid.edit("Requirement", 1, "Blames the customer")
    _wait_idle(page)
    expect(page.get_by_text("1 problem to fix before saving")).to_be_visible(timeout=20_000)
    grid.edit("Weight", 1, "-5")
    _wait_idle(page)
    expect(page.get_by_text("Blames the customer -5")).to_be_visible(timeout=20_000)
    # Two edits in quick succession, the second made while the first one's rerun runs:
    # neither is lost.
    grid.edit("Name", 1, "blame")
    grid.edit("Section", 1, "Tone")
    _wait_idle(page)
    expect(page.get_by_text("blame -5")).to_be_visible(timeout=20_000)
    expect(page.get_by_text("2 criteria in 1 section")).to_be_visible(timeout=20_000)
    # Every edit is still there after the last rerun.
    for column, shown in (("Requirement", "Blames the customer"), ("Weight", "-5"),
                          ("Name", "blame"), ("Section", "Tone")):
        expect(grid.cell(column, 1)).to_have_text(shown)
    expect(page.get_by_text("Penalties:")).to_be_visible()
    expect(page.get_by_test_id("stMetricValue").nth(1)).to_have_text("5")  # penalty weight
    page.get_by_role("button", name="Save criteria").click()
    expect(page.get_by_text("Saved 2 criteria in version 1")).to_be_visible(timeout=20_000)
    _no_tracebacks(page)

    sessions = open_database(database["url"])
    [rubric] = rubrics.list_rubrics(sessions)
    saved = rubrics.latest_version(sessions, rubric.id)
    assert [(c.name, c.weight, c.section) for c in saved.criteria] == [
        (None, 10.0, None), ("blame", -5.0, "Tone")]

    # Upload a CSV of responses into a new dataset.
    page.goto(f"{url}/responses")
    expect(page.get_by_role("heading", name="Responses", exact=True)).to_be_visible(
        timeout=45_000)
    csv_path = tmp_path / "refund_replies.csv"
    csv_path.write_bytes(CSV)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(
        str(csv_path))
    expect(page.get_by_text("All 3 rows are valid.")).to_be_visible(timeout=20_000)
    page.get_by_role("button", name="Import 3 responses").click()
    expect(page.get_by_text("Imported 3 responses from refund_replies.csv")).to_be_visible(
        timeout=20_000)
    _no_tracebacks(page)
    [dataset] = datasets.list_datasets(sessions)
    assert (dataset.name, dataset.response_count) == ("refund_replies", 3)
    sessions.kw["bind"].dispose()


def _seed_authoring(db_url: str) -> None:
    sessions = open_database(db_url)
    text = (ROOT / "ui" / "samples" / "sample_rubric.yaml").read_text()
    first = rubrics.import_rubric(sessions, "Sample: refund support", text, actor=ADMIN)
    rubrics.freeze_version(sessions, first.id, actor=ADMIN)
    criteria = first.to_criteria()
    criteria[0] = criteria[0].model_copy(update={"weight": 12.0})
    rubrics.save_criteria(sessions, first.id, criteria[:4], note="heavier refund window",
                          actor=ADMIN)
    datasets.create_dataset(
        sessions, "Sample: refund replies",
        responses=[{"id": f"r{i}", "query": "Where is my refund?",
                    "text": f"Reply {i}: refunds take 5 to 7 business days."}
                   for i in range(1, 31)], actor=ADMIN)
    sessions.kw["bind"].dispose()


def test_screenshots_of_the_authoring_pages(seeded_app_server, page: Page, screenshot,
                                            tmp_path, monkeypatch):
    data_dirs = {}

    def seed(db_url: str) -> None:
        _seed_authoring(db_url)
        data_dirs["dir"] = Path(db_url.removeprefix("sqlite:///")).parent
        monkeypatch.setenv("RUBRIC_WORKBENCH_DATA_DIR", str(data_dirs["dir"]))
        log = open_database(db_url)  # the Activity log of the app's database
        add_model_preset("openai/gpt-4.1-mini", actor=ADMIN, sessions=log)
        add_model_preset("openai/llama-3.1-8b", "http://127.0.0.1:8000/v1", actor=ADMIN,
                         sessions=log)
        log.kw["bind"].dispose()

    url = seeded_app_server(seed)
    page.set_viewport_size({"width": 1400, "height": 1500})

    page.goto(url)
    expect(page.get_by_role("heading", name="Rubric Workbench")).to_be_visible(timeout=45_000)
    _wait_idle(page)
    _no_tracebacks(page)
    screenshot("start")

    page.goto(f"{url}/rubrics")
    expect(page.get_by_role("heading", name="Sample: refund support")).to_be_visible(
        timeout=45_000)
    _wait_idle(page)
    _no_tracebacks(page)
    screenshot("rubrics")
    # The frozen first version: read-only, penalties in red, "edit as new version".
    page.get_by_role("combobox", name="Version").click()
    page.get_by_role("option", name="v1 · frozen", exact=False).click()
    expect(page.get_by_text("Version 1 is frozen")).to_be_visible(timeout=20_000)
    expect(page.get_by_role("button", name="Edit as new version")).to_be_visible()
    _wait_idle(page)
    screenshot("rubrics-frozen")
    page.get_by_role("tab", name="Compare versions (2)").click()
    expect(page.get_by_text("v1 → v2")).to_be_visible()
    _wait_idle(page)
    screenshot("rubrics-diff")
    page.get_by_role("tab", name="Export / update from file").click()
    expect(page.get_by_role("button", name="Download YAML")).to_be_visible()
    _wait_idle(page)
    screenshot("rubrics-export")

    page.set_viewport_size({"width": 1400, "height": 1900})
    page.goto(f"{url}/responses")
    expect(page.get_by_text("Responses 1–15 of 30")).to_be_visible(timeout=45_000)
    _wait_idle(page)
    _no_tracebacks(page)
    screenshot("responses")

    page.set_viewport_size({"width": 1400, "height": 2000})
    page.goto(f"{url}/settings")
    expect(page.get_by_role("heading", name="Settings", exact=True)).to_be_visible(
        timeout=45_000)
    expect(page.get_by_role("heading", name="Where your data is")).to_be_visible()
    _wait_idle(page)
    # No key in the environment: the check says which variable to set, without calling out.
    page.get_by_role("button", name="Test connection").click()
    # The first check loads litellm (seconds, far more on a loaded machine).
    expect(page.get_by_text(
        "Connection failed. No API key was found for openai/gpt-4.1-mini. Set OPENAI_API_KEY "
        "(or RUBRIC_WORKBENCH_API_KEY) in the environment of the process that runs the app, "
        "then restart the app.")).to_be_visible(timeout=90_000)
    _wait_idle(page)
    _no_tracebacks(page)
    screenshot("settings")


def test_screenshots_of_the_problems_people_hit(seeded_app_server, page: Page, screenshot,
                                                tmp_path):
    url = seeded_app_server(_seed_authoring)
    page.set_viewport_size({"width": 1400, "height": 1500})

    # A CSV with an empty response and a repeated id: problems by row, no import button.
    page.goto(f"{url}/responses")
    expect(page.get_by_text("Responses 1–15 of 30")).to_be_visible(timeout=45_000)
    page.get_by_role("tab", name="Upload a file").click()
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"id,query,response\nx1,q,fine\nx2,q,\nx1,q,again\n")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(bad))
    expect(page.get_by_text("Nothing was written: bad.csv has 2 problems")).to_be_visible(
        timeout=20_000)
    expect(page.get_by_role("button", name="Import 3 responses")).to_have_count(0)
    _wait_idle(page)
    screenshot("responses-upload-problems")

    # A weight cleared in the criteria table: the problem names the row; Save is disabled.
    page.goto(f"{url}/rubrics")
    expect(page.get_by_role("heading", name="Sample: refund support")).to_be_visible(
        timeout=45_000)
    _wait_idle(page)
    Grid(page, ".st-key-rubrics_criteria").edit("Weight", 0, "")
    _wait_idle(page)
    expect(page.get_by_text("1 problem to fix before saving")).to_be_visible(timeout=20_000)
    # The problems table (a canvas too) names the row, the criterion and the column.
    problem = page.locator('[data-testid="stDataFrame"] tbody tr', has_text="a weight is needed")
    expect(problem).to_have_count(1)
    expect(problem).to_contain_text("refund_window")
    expect(page.get_by_role("button", name="Save criteria")).to_be_disabled()
    screenshot("rubrics-editor-problems")

    # A rubric import with a bad weight and an empty requirement: every problem with its line.
    page.goto(f"{url}/rubrics")
    expect(page.get_by_role("heading", name="Sample: refund support")).to_be_visible(
        timeout=45_000)
    # The heading shows while the page is still drawing the editor below it: a person waits
    # for the page to finish before using the form (a submit sent mid-load was lost in CI).
    _wait_idle(page)
    page.get_by_text("Import YAML or JSON").click()
    page.get_by_label("…or paste YAML or JSON").fill(
        "- name: a\n  weight: ten\n  requirement: x\n- name: b\n  weight: 1\n  requirement: ''\n")
    page.get_by_label("Name for the imported rubric").fill("Broken")
    # A field's value is sent when it loses focus: let that rerun end before the click.
    page.get_by_label("Name for the imported rubric").press("Tab")
    _wait_idle(page)
    problems = page.get_by_text("Nothing was imported: pasted text has 2 problems")
    submit(page, page.get_by_role("button", name="Import", exact=True), problems,
           page.get_by_text("Imported 'Broken'"))
    expect(problems).to_be_visible()
    _wait_idle(page)
    _no_tracebacks(page)
    screenshot("rubrics-import-problems")
