"""AppTest checks of few-shot calibration: the Grade option, a run's examples, and the
Agreement page saying what a calibrated run is measured on."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from grading.types import Verdict
from storage import models as m
from storage.services import calibration, reviews, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import judge_report, make_dataset, make_rubric
from tests.ui.pages import APP, db, frame_with, texts


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def open_page(name: str) -> AppTest:
    # A generous timeout: the first run imports litellm for the estimate, on a busy machine.
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(f"app_pages/{name}.py").run()
    assert not at.exception, at.exception
    return at


def _verdict(i: int, c: int) -> str:
    return "MET" if (i + c) % 2 else "UNMET"


@pytest.fixture
def reviewed():
    """A rubric of 4 criteria, 6 responses, the first 3 reviewed on every criterion."""
    sessions = db()
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=6)
    for i, response in enumerate(responses[:3]):
        for c, criterion in enumerate(version.criteria):
            reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response.id,
                                      criterion_id=criterion.id, verdict=_verdict(i, c),
                                      note=f"note {i}")
    return sessions, version, dataset, responses


def _calibrating(k: int, graders=("per_criterion",)):
    at = open_page("grade")
    at.multiselect(key="grade_graders").set_value(list(graders)).run()
    at.text_input(key="grade_custom_models").input("openai/judge-a").run()
    at.text_input(key="grade_api_base").input("http://127.0.0.1:9/v1").run()
    at.checkbox(key="grade_calibrate").check().run()
    at.number_input(key="grade_calibration_k").set_value(k).run()
    assert not at.exception
    return at


def _run_count(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.RunRow))


def test_k_beyond_the_reviewed_examples_is_explained_and_blocks_the_launch(reviewed):
    sessions, *_ = reviewed
    at = _calibrating(4)
    counts = frame_with(at, "Reviewed")
    assert list(counts["Reviewed"]) == [3, 3, 3, 3]
    assert list(counts["Criterion"]) == ["accurate", "cites", "concise", "harmful"]
    shown = texts(at)
    assert "4 examples per criterion were asked for" in shown
    assert "Choose k of at most 3" in shown
    assert at.button(key="grade_launch").disabled
    assert _run_count(sessions) == 0


def test_a_launch_from_a_stale_form_is_refused_when_examples_became_disputed(reviewed):
    sessions, version, _dataset, responses = reviewed
    at = _calibrating(3)
    assert not at.button(key="grade_launch").disabled
    # Meanwhile another reviewer disagrees on one response: that verdict is now disputed,
    # so "cites" has 2 usable examples; the form still shows 3.
    reviews.set_human_verdict(sessions, actor=local_actor("bo"), response_id=responses[0].id,
                              criterion_id=version.criteria[1].id,
                              verdict="UNMET" if _verdict(0, 1) == "MET" else "MET")
    at.button(key="grade_launch").click().run()
    assert not at.exception
    shown = texts(at)
    assert "Nothing more was launched" in shown
    assert "criterion 2 ('cites'): 2 (1 MET, 1 UNMET)" in shown
    assert _run_count(sessions) == 0


def test_the_holistic_grader_cannot_be_calibrated(reviewed):
    at = _calibrating(2, graders=("per_criterion", "rubric_as_judge"))
    assert "cannot be calibrated" in texts(at)
    assert at.button(key="grade_launch").disabled


def test_a_calibrated_launch_records_its_examples_and_shows_them(reviewed):
    sessions, *_ = reviewed
    at = _calibrating(2)
    at.number_input(key="grade_calibration_seed").set_value(3).run()
    estimate = frame_with(at, "Calls")
    assert list(estimate["Calls"]) == [6 * 4]
    assert "with 2 reviewed examples per criterion" in texts(at)
    at.button(key="grade_launch").click().run()
    assert not at.exception
    [run] = runs.list_runs(sessions)
    assert (run.settings.calibration.k, run.settings.calibration.seed) == (2, 3)
    used = calibration.list_run_examples(sessions, run.id)
    assert len([e for e in used if e.role == "example"]) == 2 * 4
    # The run list says it is calibrated and lists what its judge is shown.
    at.run()
    table = frame_with(at, "Calibration")
    assert list(table["Calibration"]) == ["k=2, seed 3"]
    [expander] = [e for e in at.expander if "Examples shown to the judge" in e.label]
    assert "calibrated (k=2)" in expander.label
    examples = frame_with(at, "Verdict")
    assert sorted(examples["Response"]) == sorted(e.response_label for e in used)
    assert set(examples["Reason"]) <= {f"note {i}" for i in range(3)}


def test_agreement_says_a_calibrated_run_is_measured_on_held_out_responses(reviewed):
    sessions, version, dataset, responses = reviewed
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/judge-a", actor=ADMIN,
                          settings={"calibration": {"k": 1}})
    criteria = version.to_criteria()
    runs.start_run(sessions, run.id)
    for i, response in enumerate(responses):
        runs.record_grade(sessions, run.id, response.id, judge_report(
            criteria, [Verdict(_verdict(i, c)) for c in range(4)], run.settings.scoring(),
            response.to_grade))
    used = {e.response_id for e in calibration.list_run_examples(sessions, run.id)}
    examples = len(used & {r.id for r in responses[:3]})
    at = open_page("agreement")
    shown = texts(at)
    assert (f"held out: {3 - examples} of 3 reviewed responses; {examples} "
            f"{'was an example' if examples == 1 else 'were examples'}") in shown
    assert "calibrated (k=1)" in shown


def test_the_grade_estimate_grows_with_the_examples_each_prompt_shows(reviewed):
    at = _calibrating(1)
    one = frame_with(at, "Calls")["Tokens (approx.)"][0]
    at.number_input(key="grade_calibration_k").set_value(2).run()
    two = frame_with(at, "Calls")["Tokens (approx.)"][0]
    at.checkbox(key="grade_calibrate").uncheck().run()
    off = frame_with(at, "Calls")["Tokens (approx.)"][0]
    assert off < one < two
