"""AppTest checks of the Judges page: panels made from runs, and the wording trial's refusals."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from storage.services import panels
from tests.fake_provider import fake_provider, fake_provider_server
from tests.ui.pages import APP, texts, unescape
from tests.ui.seed import seed_graded

__all__ = ["fake_provider", "fake_provider_server"]


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _open(name: str = "Ada") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer_name"] = name
    at.run()
    at.switch_page("app_pages/judges.py")
    return at.run()


def test_empty_database_says_what_to_do():
    at = _open()
    assert not at.exception, at.exception
    assert "Nothing graded yet" in at.info[0].value


def test_a_panel_is_made_from_the_runs_and_shown_with_member_agreement():
    seeded = seed_graded(4)
    at = _open()
    assert not at.exception, at.exception
    assert at.multiselect[0].value == [
        f"run {r.id}: {r.grader.replace('_', '-')} · {r.model}" for r in seeded.runs]
    at.button[0].click().run()  # the form's "Create panel"
    assert not at.exception, at.exception
    [panel] = panels.list_panels(seeded.sessions)
    assert panel.rule == "majority" and [m.run.id for m in panel.members] == [
        r.id for r in seeded.runs]
    shown = texts(at)
    assert f"Created {panel.label}" in shown
    assert "majority of 2 runs" in shown
    frames = [df.value for df in at.dataframe]
    agreement = next(f for f in frames if "α" in f.columns)
    assert list(agreement["criterion"]) == ["accurate", "cites", "concise", "harmful"]
    # r1: the two judges disagree on 'cites'; a tie is undecided (grading.ties)
    assert "Ties (undecided)" in [m.label for m in at.metric]


def test_a_second_click_on_create_panel_finds_the_panel_instead_of_a_copy():
    seeded = seed_graded(4)
    at = _open()
    at.button[0].click().run()  # the form's "Create panel"
    at.button[0].click().run()  # clicked again (a double click sends both)
    assert not at.exception, at.exception
    [panel] = panels.list_panels(seeded.sessions)
    assert (f"{panel.label} already combines these runs with this rule and these weights: "
            "no copy was made.") in texts(at)


def test_weights_that_are_not_numbers_get_a_message_and_no_panel():
    seeded = seed_graded(3)
    at = _open()
    at.selectbox[1].set_value("weighted")
    at.text_input[0].set_value("two, one")
    at.button[0].click().run()
    assert "Weights must be numbers" in texts(at)
    assert panels.list_panels(seeded.sessions) == []


def test_a_wording_trial_with_no_reviewed_responses_says_what_to_do_first():
    seed_graded(3)
    at = _open()
    assert not at.exception, at.exception
    assert "nobody has reviewed 'accurate'" in "\n".join(w.value for w in at.warning)
    assert not [b for b in at.button if b.label == "Try it"]


def test_an_interrupted_trial_shows_in_every_browser_and_try_again_completes_it(
        fake_provider, monkeypatch):
    """A trial whose app died (its process is gone) reads as interrupted in any browser;
    Try again judges it against the fake provider over litellm's HTTP path."""
    import socket
    import subprocess
    import time

    from grading.types import ScoringSettings
    from storage.services import reviews, runs, trial_progress, trials
    from storage.services.reviewers import local_actor
    from tests.actors import ADMIN
    from tests.storage.helpers import CRITERIA, judge_report
    from tests.ui.seed import M, U

    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")
    seeded = seed_graded(3)
    sessions = seeded.sessions
    run = runs.create_run(sessions, rubric_version_id=seeded.version.id,
                          dataset_id=seeded.responses[0].dataset_id, grader="per_criterion",
                          model="openai/judge-x", settings={"api_base": fake_provider.api_base},
                          actor=ADMIN)
    accurate = seeded.version.criteria[0]
    for response in seeded.responses:
        runs.record_grade(sessions, run.id, response.id, judge_report(
            CRITERIA, [M, M, M, U], ScoringSettings(), response.output))
        reviews.set_human_verdict(sessions, response_id=response.id, criterion_id=accurate.id,
                                  verdict=M, actor=local_actor("Pat"))
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement="States the exact dose")
    ended = subprocess.Popen(["true"])  # a process of this machine that has ended
    ended.wait()
    trial_id = trial_progress.begin(
        sessions, criterion_id=accurate.id, base_run_id=run.id, requirement=plan.requirement,
        total=3, max_cost=None, actor=ADMIN, worker=f"{socket.gethostname()}:{ended.pid}:x")

    first, second = _open(), _open("Bo")
    for at in (first, second):
        assert not at.exception, at.exception
        assert f"Trial {trial_id} was interrupted (0 of 3 reviewed responses judged)" in \
            texts(at)
    first.button(key=f"judges_retry_{trial_id}").click().run()
    assert not first.exception, first.exception
    deadline = time.monotonic() + 120
    while trial_progress.trial_status(sessions, trial_id).status == "running":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert trial_progress.trial_status(sessions, trial_id).status == "done"
    second.run()
    shown = texts(second)
    assert "was interrupted" not in shown and f"Trial {trial_id}" in shown
    assert fake_provider.requests == 3
    # Issue 35.3: the trial's figures say which wording and how many responses; none is
    # called "macro-F1 before", a name the Agreement page's other figure could also claim
    labels = [metric.label for metric in second.metric]
    assert "Macro-F1, current wording (n=3)" in labels and \
        "Macro-F1, new wording (n=3)" in labels
    assert not any("before" in label.lower() for label in labels)


def test_a_calibrated_judge_is_tried_with_its_examples_and_the_page_says_so():
    from storage.services import reviews, runs
    from storage.services.reviewers import local_actor
    from tests.actors import ADMIN
    from tests.ui.seed import M, U

    seeded = seed_graded(8)
    for index, response in enumerate(seeded.responses):
        for criterion in seeded.version.criteria:
            reviews.set_human_verdict(seeded.sessions, response_id=response.id,
                                      criterion_id=criterion.id, actor=local_actor("Pat"),
                                      verdict=M if index % 2 else U)
    calibrated = runs.create_run(
        seeded.sessions, rubric_version_id=seeded.version.id,
        dataset_id=seeded.responses[0].dataset_id, grader="per_criterion",
        model="openai/judge-c", actor=ADMIN,
        settings={"api_base": "http://127.0.0.1:9/v1", "calibration": {"k": 2, "seed": 1}})
    at = _open()
    at.selectbox(key="judges_trial_run").set_value(seeded.runs[0].id).run()
    assert not at.exception, at.exception
    assert "is calibrated" not in texts(at)  # an uncalibrated judge: nothing to say
    at.selectbox(key="judges_trial_run").set_value(calibrated.id).run()
    assert not at.exception, at.exception
    assert (f"Run #{calibrated.id} is calibrated: the judge sees the same 2 reviewed "
            "examples for this criterion") in texts(at)


def test_a_two_member_majority_panel_warns_that_every_disagreement_is_a_tie():
    seeded = seed_graded(4)
    at = _open()
    at.button[0].click().run()  # two runs, the majority rule (the form's defaults)
    assert not at.exception, at.exception
    [panel] = panels.list_panels(seeded.sessions)
    [warning] = [unescape(w.value) for w in at.warning if "tie" in w.value]
    assert f"Created {panel.label}" in warning
    assert "every disagreement between them is a tie" in warning
    at.button[0].click().run()  # the same panel found again: no second warning
    assert not [w for w in at.warning if "tie" in w.value]
