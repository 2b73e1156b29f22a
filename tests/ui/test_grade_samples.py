"""AppTest checks of the Grade page's "Samples per criterion": the estimate multiplies, the
launched run carries the samples and the temperature and stores every sample (graded over
litellm's HTTP path against the fake provider), and samples with a one-call grader are
refused before launch."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from storage.config import database_url
from storage.engine import open_database
from storage.model_presets import add_model_preset
from storage.services import runs
from tests.actors import ADMIN
from tests.fake_provider import fake_provider, fake_provider_server
from tests.jobs.helpers import run_now
from tests.ui.grade_setup import runs_graded_by_the_test, seeded_sessions
from tests.ui.pages import texts
from tests.ui.seed import APP

__all__ = ["fake_provider", "fake_provider_server", "runs_graded_by_the_test"]
MODEL = "openai/judge-a"


@pytest.fixture
def sessions():
    return seeded_sessions(4)


def _page(api_base: str) -> AppTest:
    sessions = open_database(database_url())
    add_model_preset(MODEL, api_base, actor=ADMIN, sessions=sessions)
    sessions.kw["bind"].dispose()
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/grade.py").run()
    assert not at.exception, at.exception
    at.multiselect(key="grade_presets").set_value([f"{MODEL} @ {api_base}"]).run()
    return at


def test_samples_multiply_the_estimate_and_every_sample_is_stored(sessions, fake_provider):
    at = _page(fake_provider.api_base)
    once = list(at.dataframe[0].value["Calls"])
    field = at.number_input(key="grade_samples")
    assert field.label == "Samples per criterion" and field.value == 1
    assert "cost multiply by this number" in field.help
    field.set_value(3).run()
    at.number_input(key="grade_temperature").set_value(0.7).run()
    assert not at.exception, at.exception
    assert list(at.dataframe[0].value["Calls"]) == [3 * c for c in once]

    at.button(key="grade_launch").click().run()
    assert not at.exception, at.exception
    [run] = runs.list_runs(sessions)
    assert run.settings.samples == 3 and run.settings.extra["temperature"] == 0.7
    run_now(sessions, run.id)
    assert fake_provider.requests == once[0] * 3
    stored = [c.samples for g in runs.list_grades(sessions, run.id) for c in g.criteria]
    assert stored and all(len(s) == 3 for s in stored)


def test_one_sample_launches_a_run_without_samples(sessions, fake_provider):
    at = _page(fake_provider.api_base)
    at.button(key="grade_launch").click().run()
    [run] = runs.list_runs(sessions)
    assert run.settings.samples == 1
    assert "samples" not in run.settings.extra and "temperature" not in run.settings.extra


def test_samples_with_a_one_call_grader_are_refused_before_launch(sessions, fake_provider):
    at = _page(fake_provider.api_base)
    at.multiselect(key="grade_graders").set_value(["per_criterion", "one_shot"]).run()
    at.number_input(key="grade_samples").set_value(2).run()
    assert "2 samples per criterion need the per-criterion grader only" in texts(at)
    assert at.button(key="grade_launch").disabled
    at.number_input(key="grade_samples").set_value(1).run()
    assert "per-criterion grader only" not in texts(at)
    assert not at.button(key="grade_launch").disabled
