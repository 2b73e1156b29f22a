"""AppTest checks of the Grade page's cost cap for a single run: the field next to the
estimate, the cap carried by the launched run, a cap refused for a model with no price, and
a run its cap stopped said plainly on Grade and Results (graded over litellm's HTTP path
against the fake provider)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from storage.config import database_url
from storage.engine import open_database
from storage.model_presets import add_model_preset
from storage.services import runs
from tests.actors import ADMIN
from tests.fake_provider import fake_provider, fake_provider_server, judge_reply
from tests.jobs.helpers import run_now
from tests.ui.grade_setup import runs_graded_by_the_test, seeded_sessions
from tests.ui.pages import texts, unescape
from tests.ui.seed import APP

__all__ = ["fake_provider", "fake_provider_server", "runs_graded_by_the_test"]
MODEL = "openai/judge-a"
CAP_LABEL = "Stop the run when its cost reaches (USD, 0 = no cap)"


@pytest.fixture
def sessions():
    return seeded_sessions(6)


def _page(at: AppTest | None = None, page: str = "grade") -> AppTest:
    at = at or AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def _priced(api_base: str) -> AppTest:
    sessions = open_database(database_url())
    add_model_preset(MODEL, api_base, input_price=1.0, output_price=0.0, actor=ADMIN,
                     sessions=sessions)
    sessions.kw["bind"].dispose()
    at = _page()
    at.multiselect(key="grade_presets").set_value([f"{MODEL} @ {api_base}"]).run()
    return at


def test_a_single_run_carries_the_cap_set_next_to_its_estimate(sessions, fake_provider):
    at = _priced(fake_provider.api_base)
    cap = at.number_input(key="grade_run_cap")
    assert cap.label == CAP_LABEL and cap.value == 0.0
    cap.set_value(0.25).run()
    assert not at.exception
    assert "the run will stop at the cap" not in texts(at)  # the estimate is far below
    at.button(key="grade_launch").click().run()
    [run] = runs.list_runs(sessions)
    assert run.settings.extra["cost_cap"] == 0.25
    assert run.settings.price is not None  # the cap is kept at the price set in Settings


def test_no_cap_launches_a_run_without_one(sessions, fake_provider):
    at = _priced(fake_provider.api_base)
    at.button(key="grade_launch").click().run()
    [run] = runs.list_runs(sessions)
    assert "cost_cap" not in run.settings.extra


def test_a_cap_above_the_estimate_warns_and_several_runs_each_get_the_cap(
        sessions, fake_provider):
    at = _priced(fake_provider.api_base)
    at.multiselect(key="grade_graders").set_value(["per_criterion", "one_shot"]).run()
    cap = at.number_input(key="grade_run_cap")
    assert cap.label == "Stop each run when its cost reaches (USD, 0 = no cap)"
    cap.set_value(1e-6).run()
    shown = texts(at)
    assert "the run will stop at the cap with some responses not graded" in shown
    assert not at.button(key="grade_launch").disabled
    at.button(key="grade_launch").click().run()
    assert [r.settings.extra["cost_cap"] for r in runs.list_runs(sessions)] == [1e-6, 1e-6]


def test_a_cap_on_a_model_with_no_price_is_refused_and_nothing_is_launched(
        sessions, fake_provider):
    at = _page()
    at.text_input(key="grade_custom_models").input("openai/no-price-model").run()
    at.text_input(key="grade_api_base").input(fake_provider.api_base).run()
    assert not at.button(key="grade_launch").disabled  # no cap: cost unknown is allowed
    at.number_input(key="grade_run_cap").set_value(2.0).run()
    assert not at.exception
    [error] = [e.value for e in at.error if "cost cap" in e.value]
    assert "The cost cap cannot be kept: no price for openai/no-price-model" in texts(at)
    assert "Settings page" in error
    assert at.button(key="grade_launch").disabled
    assert runs.list_runs(sessions) == []


def test_as_a_panel_the_panels_own_cap_replaces_the_run_cap(sessions, fake_provider):
    at = _page()
    at.text_input(key="grade_custom_models").input("openai/judge-a, openai/judge-b").run()
    at.text_input(key="grade_api_base").input(fake_provider.api_base).run()
    at.toggle(key="grade_as_panel").set_value(True).run()
    labels = [n.label for n in at.number_input]
    assert CAP_LABEL not in labels
    assert "Stop the panel when its cost reaches (USD, 0 = no cap)" in labels


def test_a_run_stopped_by_its_cap_says_so_on_grade_and_results(sessions, fake_provider):
    def priced(body):
        reply = judge_reply(body)
        reply.usage = {"prompt_tokens": 100_000, "completion_tokens": 0,
                       "total_tokens": 100_000}
        return reply

    fake_provider.default = priced  # $0.10 a call at $1 per million input tokens
    at = _priced(fake_provider.api_base)
    at.multiselect(key="grade_graders").set_value(["one_shot"]).run()
    at.number_input(key="grade_run_cap").set_value(0.2).run()
    at.number_input(key="grade_concurrency").set_value(1).run()
    at.button(key="grade_launch").click().run()
    [run] = runs.list_runs(sessions)
    assert run_now(sessions, run.id).status == "failed"
    at = _page(at)  # the runs list reads the stopped run
    shown = texts(at)
    assert "stopped at its cost cap" in shown
    assert "stopped at the cost cap ($0.2) after spending $0.2000" in shown
    assert ":red-badge[failed]" not in "\n".join(m.value for m in at.markdown)
    requeue = at.button(key=f"grade_requeue_{run.id}")
    assert requeue.disabled and "higher cap" in requeue.help
    table = next(f.value for f in at.dataframe if "Cost cap" in f.value.columns)
    assert list(table["Status"]) == ["stopped at its cost cap"]
    assert list(table["Cost cap"]) == ["$0.2"]

    results = _page(at, "results")
    warning = unescape("\n".join(w.value for w in results.warning))
    assert f"Run #{run.id} stopped at its cost cap after grading 2 of 6 responses" in warning
