"""The Judges page on a wording trial of a rated (ordinal) criterion: the exact-match rate
and the quadratic-weighted kappa before and after, and flips by option label (issue 34)."""

from __future__ import annotations

import asyncio

import pytest
from sklearn.metrics import cohen_kappa_score
from streamlit.testing.v1 import AppTest

from storage.config import database_url
from storage.engine import open_database
from storage.services import datasets, reviews, runs, trials
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import LIKERT, MIXED, judge_report
from tests.storage.helpers import make_rubric
from tests.ui.pages import APP, texts

LABELS = [o.label for o in LIKERT]
PEOPLE = ["Poor", "Fair", "Good", "Excellent"]
BEFORE = ["Good", "Good", "Good", "Good"]
AFTER = ["Poor", "Good", "Good", "Very good"]


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _seed() -> tuple[int, int]:
    sessions = open_database(database_url())
    version = make_rubric(sessions, "Mixed", MIXED)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(4)], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/judge-a", actor=ADMIN)
    clarity = version.criteria[1]
    for response, before, person in zip(responses, BEFORE, PEOPLE, strict=True):
        runs.record_grade(sessions, run.id, response.id,
                          judge_report(["MET", before, "formal"], reason="judged"))
        reviews.set_human_verdict(sessions, response_id=response.id, criterion_id=clarity.id,
                                  verdict=person, actor=local_actor("Pat"))
    after = dict(zip((r.id for r in responses), AFTER, strict=True))

    async def grade(response, criterion):
        return judge_report([after[response.id]], [criterion], reason="new reading")

    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=clarity.id,
                             requirement="How clear is it to a patient?")
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None,
                                          grade_fn=grade))
    return clarity.id, result.trial_id


def _kappa(judged):
    return cohen_kappa_score([LABELS.index(x) for x in PEOPLE],
                             [LABELS.index(x) for x in judged], weights="quadratic")


def test_a_rated_trial_shows_exact_match_weighted_kappa_and_flips_by_label():
    clarity_id, trial_id = _seed()
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer_name"] = "Ada"
    at.run()
    at.switch_page("app_pages/judges.py")
    at.session_state["judges_criterion_id"] = clarity_id
    at.run()
    assert not at.exception, at.exception
    assert f"Trial {trial_id}" in texts(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Exact match, current wording (n=4)"] == "25%"
    assert metrics["Exact match, new wording (n=4)"] == "50%"
    assert metrics["Quadratic-weighted kappa"] == \
        f"{_kappa(BEFORE):.2f} → {_kappa(AFTER):.2f}"
    [flips] = [f.value for f in at.dataframe]
    assert list(flips["people"]) == ["Poor", "Excellent"]
    assert list(flips["before"]) == ["Good", "Good"]
    assert list(flips["after"]) == ["Poor", "Very good"]
