"""The panel's tag in Results' "Panels to compare" shows whole at 1280x800 and 1920x1080
(issue 35 item 15: it was cut to "panel 1 (majority of 3) · majority o…"); its members are
said in full under the picker."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from playwright.sync_api import expect

from grading.types import ScoringSettings, Verdict
from storage.engine import open_database
from storage.services import datasets, panels, runs
from tests.actors import ADMIN
from tests.e2e.streamlit_page import no_tracebacks, wait_idle
from tests.storage.helpers import CRITERIA, judge_report, make_rubric

SHOTS = Path(os.environ.get("REVIEW_SHOTS", "test-artifacts/screenshots"))
MODELS = ("openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-latest", "ollama/llama3.1:8b")
# The picker's tags whose text is wider than their box.
CUT_TAGS = """picker => [...picker.querySelectorAll('[data-tag] span[title]')]
  .filter(el => el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1)
  .map(el => el.innerText)"""
PANEL: dict[str, int] = {}


def _seed(url: str) -> None:
    sessions = open_database(url)
    version = make_rubric(sessions, "Support")
    dataset = datasets.create_dataset(sessions, "Replies", responses=[
        {"id": f"s{i}", "query": f"question {i}", "text": f"answer {i}"} for i in range(4)],
        actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    rng = random.Random(2)
    made = []
    for model in MODELS:
        run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                              grader="per_criterion", model=model, actor=ADMIN)
        runs.start_run(sessions, run.id, worker="seed")
        for response in responses:
            verdicts = [rng.choice([Verdict.MET, Verdict.UNMET]) for _ in CRITERIA]
            runs.record_grade(sessions, run.id, response.id, judge_report(
                CRITERIA, verdicts, ScoringSettings(), response.output))
        runs.finish_run(sessions, run.id)
        made.append(run.id)
    PANEL["id"] = panels.create_panel(sessions, run_ids=made, rule="majority",
                                      actor=ADMIN).id
    sessions.kw["bind"].dispose()


@pytest.mark.parametrize("width,height", [(1280, 800), (1920, 1080)])
def test_the_panel_tag_is_not_cut(seeded_app_server, page, width, height):
    url = seeded_app_server(_seed)
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{url}/results?panels={PANEL['id']}")
    picker = page.get_by_test_id("stMultiSelect").filter(
        has=page.get_by_role("combobox", name="Panels to compare"))
    expect(picker).to_contain_text("panel 1 (majority of 3)", timeout=60_000)
    wait_idle(page)
    no_tracebacks(page)
    expect(picker.locator("[data-tag] span[title]")).to_have_count(1)
    assert picker.evaluate(CUT_TAGS) == []
    members = page.get_by_test_id("stCaptionContainer").filter(has_text="haiku")
    expect(members).to_have_count(1)
    assert members.inner_text().replace("\u2060", "") == (
        "panel 1 (majority of 3): majority of #1 openai/gpt-4o-mini, "
        "#2 anthropic/claude-3-5-haiku-latest, #3 ollama/llama3.1:8b")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"results-panel-tag-{width}.png"))
