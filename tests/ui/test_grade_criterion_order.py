"""AppTest checks of the Grade page's "Shuffle the criteria per response (one-shot)": the
launched one-shot run carries the option and stores where each criterion was listed (graded
over litellm's HTTP path against the fake provider); with another grader it is refused
before launch."""

from __future__ import annotations

import pytest

from storage.services import runs
from tests.fake_provider import fake_provider, fake_provider_server
from tests.jobs.helpers import run_now
from tests.ui.grade_setup import runs_graded_by_the_test, seeded_sessions
from tests.ui.pages import texts
from tests.ui.test_grade_samples import _page

__all__ = ["fake_provider", "fake_provider_server", "runs_graded_by_the_test"]


@pytest.fixture
def sessions():
    return seeded_sessions(4)


def test_a_shuffled_one_shot_run_stores_each_criterions_position(sessions, fake_provider):
    at = _page(fake_provider.api_base)
    at.multiselect(key="grade_graders").set_value(["one_shot"]).run()
    box = at.checkbox(key="grade_shuffle_criteria")
    assert box.label == "Shuffle the criteria per response (one-shot)" and not box.value
    box.check().run()
    assert not at.exception, at.exception
    at.button(key="grade_launch").click().run()
    assert not at.exception, at.exception
    [run] = runs.list_runs(sessions)
    assert run.grader == "one_shot" and run.settings.shuffle_criteria
    run_now(sessions, run.id)
    grades = runs.list_grades(sessions, run.id)
    assert grades
    for grade in grades:
        assert sorted(c.prompt_position for c in grade.criteria) == list(
            range(1, len(grade.criteria) + 1))


def test_an_unshuffled_run_stores_no_option(sessions, fake_provider):
    at = _page(fake_provider.api_base)
    at.multiselect(key="grade_graders").set_value(["one_shot"]).run()
    at.button(key="grade_launch").click().run()
    [run] = runs.list_runs(sessions)
    assert "shuffle_criteria" not in run.settings.extra


def test_shuffling_with_another_grader_is_refused_before_launch(sessions, fake_provider):
    at = _page(fake_provider.api_base)
    at.multiselect(key="grade_graders").set_value(["one_shot", "per_criterion"]).run()
    at.checkbox(key="grade_shuffle_criteria").check().run()
    assert "Shuffling the criteria needs the one-shot grader only" in texts(at)
    assert at.button(key="grade_launch").disabled
    at.checkbox(key="grade_shuffle_criteria").uncheck().run()
    assert "one-shot grader only" not in texts(at)
    assert not at.button(key="grade_launch").disabled
