"""AppTest checks of the Grade page's "grade as a judge panel": what stops a panel, the
launch (one run per model and the panel over them, never twice), the cost cap shared by the
members, and the panel's grades as the members finish (graded over litellm's HTTP path
against the fake provider; a member that fails abstains)."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from grading.types import Verdict
from storage.model_presets import add_model_preset
from storage.services import panels, runs
from tests.actors import ADMIN
from tests.fake_provider import Reply, fake_provider, fake_provider_server, judge_reply
from tests.jobs.helpers import run_now
from tests.ui.grade_setup import runs_graded_by_the_test, seeded_sessions
from tests.ui.pages import texts
from tests.ui.seed import APP

__all__ = ["fake_provider", "fake_provider_server", "runs_graded_by_the_test"]
MODELS = ("openai/judge-a", "openai/judge-b", "openai/judge-c")


@pytest.fixture
def sessions():
    return seeded_sessions(3)


def _grade_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/grade.py").run()
    assert not at.exception
    return at


def _as_panel(at: AppTest, api_base: str, models=MODELS, rule="majority") -> AppTest:
    at.text_input(key="grade_custom_models").input(", ".join(models)).run()
    at.text_input(key="grade_api_base").input(api_base).run()
    at.toggle(key="grade_as_panel").set_value(True).run()
    at.selectbox(key="grade_panel_rule").select(rule).run()
    return at


def test_a_holistic_grader_or_a_single_model_cannot_be_a_panel_and_the_page_says_why(
        sessions, fake_provider):
    at = _as_panel(_grade_page(), fake_provider.api_base, models=MODELS[:1])
    assert "A panel needs at least two models" in texts(at)
    assert at.button(key="grade_launch").disabled

    at.text_input(key="grade_custom_models").input(", ".join(MODELS[:2])).run()
    at.multiselect(key="grade_graders").set_value(["per_criterion", "rubric_as_judge"]).run()
    shown = texts(at)
    assert "gives one 0–100 score per response, not a verdict per criterion" in shown
    assert "cannot vote in a panel" in shown
    assert at.button(key="grade_launch").disabled
    assert runs.list_runs(sessions) == [] and panels.list_panels(sessions) == []


def test_grading_as_a_panel_launches_one_run_per_model_and_one_panel_never_twice(
        sessions, fake_provider):
    at = _as_panel(_grade_page(), fake_provider.api_base)
    assert "the estimate above covers every member" in texts(at)
    estimate = at.dataframe[0].value
    assert list(estimate["Calls"]) == [12, 12, 12]  # 3 responses x 4 criteria per member
    launch = at.button(key="grade_launch")
    assert launch.label == "Launch 3 runs as a panel" and not launch.disabled
    launch.click().run()
    assert not at.exception
    members = runs.list_runs(sessions)
    assert [(r.grader, r.model) for r in members] == [("per_criterion", m) for m in MODELS]
    [panel] = panels.list_panels(sessions)
    assert panel.rule == "majority" and [m.run.id for m in panel.members] == [
        r.id for r in members]
    assert f"Panel P{panel.id}" in texts(at)
    assert f"Panel P{panel.id} (majority of runs " in texts(at)
    assert "0 of 3 members finished" in texts(at)  # the runs list follows the panel

    # A second click: the same runs are still queued, so nothing new is queued or made
    at.button(key="grade_launch").click().run()
    assert "already exists, so no new panel was made" in texts(at)
    # A reload (a new session) and a click: still one set of runs and one panel
    again = _as_panel(_grade_page(), fake_provider.api_base)
    again.button(key="grade_launch").click().run()
    assert len(runs.list_runs(sessions)) == 3
    assert [p.id for p in panels.list_panels(sessions)] == [panel.id]

    # The members grade (judge-c fails every call): the panel's grades appear as they
    # finish, judge-c abstaining and staying in the denominator.
    def judges(body):
        if body["model"] == "judge-c":
            return Reply(status=401, error_message="bad key")
        prompt = body["messages"][-1]["content"]
        if body["model"] == "judge-b" and "answer 0" in prompt:
            return Reply(json.dumps({"verdict": "UNMET", "reason": "no"}))
        return judge_reply(body)

    fake_provider.default = judges
    assert panels.panel_grades(sessions, panel.id) == []
    run_now(sessions, members[0].id)
    first = panels.panel_grades(sessions, panel.id)
    assert len(first) == 3 and all(g.members_graded == 1 for g in first)
    # one MET of three, two members still queued: the panel's verdict waits for them (it
    # neither abstains nor counts them as failed), and the record says it is incomplete
    assert all(c.decision.verdict is None and c.decision.note.startswith(
        "undecided: waiting for runs ") for c in first[0].criteria)
    assert first[0].pending_members == (members[1].id, members[2].id)
    assert not first[0].complete and first[0].score is None
    run_now(sessions, members[1].id)
    assert run_now(sessions, members[2].id).status == "failed"
    grades = {g.response_id: g for g in panels.panel_grades(sessions, panel.id)}
    by_position = [grades[rid] for rid in sorted(grades)]
    # r0: judge-a MET, judge-b UNMET, judge-c failed -> a tie: undecided (grading.ties;
    # changed deliberately: it went to the lower-score verdict)
    tie = by_position[0].criteria[0].decision
    assert tie.tie and tie.verdict is Verdict.CANNOT_ASSESS and tie.failed == 1
    # r1: two of three MET, judge-c abstaining: a strict majority
    assert by_position[1].criteria[0].decision.verdict is Verdict.MET


def test_weights_and_a_cost_cap_reach_the_members(sessions, fake_provider):
    for model in MODELS:
        add_model_preset(model, fake_provider.api_base, input_price=1.0, output_price=2.0,
                         actor=ADMIN, sessions=sessions)
    at = _grade_page()
    at.multiselect(key="grade_presets").set_value(
        [f"{m} @ {fake_provider.api_base}" for m in MODELS]).run()
    at.toggle(key="grade_as_panel").set_value(True).run()
    at.selectbox(key="grade_panel_rule").select("weighted").run()
    weights = [n for n in at.number_input if n.key.startswith("grade_panel_weight_")]
    assert [w.label for w in weights] == [f"Weight of {m}" for m in MODELS]
    weights[2].set_value(3.0).run()
    at.number_input(key="grade_panel_cap").set_value(0.5).run()
    at.button(key="grade_launch").click().run()
    assert not at.exception
    members = runs.list_runs(sessions)
    caps = [r.settings.extra["cost_cap"] for r in members]
    assert sum(caps) == pytest.approx(0.5) and len(set(caps)) == 1  # equal estimates
    [panel] = panels.list_panels(sessions)
    assert panel.rule == "weighted" and [m.weight for m in panel.members] == [1.0, 1.0, 3.0]


def test_a_cost_cap_on_unpriced_models_is_refused_before_launch(sessions, fake_provider):
    at = _as_panel(_grade_page(), fake_provider.api_base)
    at.number_input(key="grade_panel_cap").set_value(1.0).run()
    assert "The cost cap cannot be kept: some models have no price" in texts(at)
    assert at.button(key="grade_launch").disabled
