"""AppTest checks of the Grade page's "Shuffle the options per response (multi-choice)": the
launched run carries the option and records each response's option order (graded over
litellm's HTTP path against the fake provider); with rubric-as-judge, or a rubric version
without options, it is refused before launch with a message saying why."""

from __future__ import annotations

import pytest

from storage.config import database_url
from storage.engine import open_database
from storage.services import runs
from tests.fake_provider import fake_provider, fake_provider_server
from tests.jobs.helpers import run_now
from tests.kinds import MIXED
from tests.storage.helpers import make_dataset, make_rubric
from tests.ui.grade_setup import runs_graded_by_the_test, seeded_sessions
from tests.ui.pages import texts
from tests.ui.test_grade_samples import _page

__all__ = ["fake_provider", "fake_provider_server", "runs_graded_by_the_test"]
LABEL = "Shuffle the options per response (multi-choice)"


@pytest.fixture
def sessions():
    """A rubric with a rating and a category beside a binary criterion."""
    sessions = open_database(database_url())
    make_rubric(sessions, criteria=MIXED)
    make_dataset(sessions, count=6)
    return sessions


def test_a_run_with_shuffled_options_records_each_responses_order(sessions, fake_provider):
    at = _page(fake_provider.api_base)
    at.multiselect(key="grade_graders").set_value(["per_criterion"]).run()
    box = at.checkbox(key="grade_shuffle_options")
    assert box.label == LABEL and not box.value
    box.check().run()
    assert not at.exception, at.exception
    at.button(key="grade_launch").click().run()
    assert not at.exception, at.exception
    [run] = runs.list_runs(sessions)
    assert run.settings.shuffle_options
    run_now(sessions, run.id)
    orders = set()
    for grade in runs.list_grades(sessions, run.id):
        binary, rating, _category = grade.criteria
        assert binary.shuffle_order is None
        orders.add(rating.shuffle_order)
        assert rating.shuffle_order is None or sorted(rating.shuffle_order) == [0, 1, 2, 3, 4]
    assert len(orders - {None}) >= 2  # responses saw their own orders


def test_an_unshuffled_run_stores_no_option(sessions, fake_provider):
    at = _page(fake_provider.api_base)
    at.button(key="grade_launch").click().run()
    assert not at.exception, at.exception
    for run in runs.list_runs(sessions):
        assert "shuffle_options" not in run.settings.extra


def test_shuffling_options_with_rubric_as_judge_is_refused_before_launch(sessions,
                                                                          fake_provider):
    at = _page(fake_provider.api_base)
    at.multiselect(key="grade_graders").set_value(["per_criterion", "rubric_as_judge"]).run()
    at.checkbox(key="grade_shuffle_options").check().run()
    assert "Shuffling the options does not apply to rubric-as-judge" in texts(at)
    assert at.button(key="grade_launch").disabled
    at.multiselect(key="grade_graders").set_value(["per_criterion"]).run()
    assert "does not apply to rubric-as-judge" not in texts(at)
    assert not at.button(key="grade_launch").disabled


def test_shuffling_options_on_a_rubric_without_options_is_refused(fake_provider):
    seeded_sessions(3)  # the sample rubric: binary criteria only
    at = _page(fake_provider.api_base)
    at.checkbox(key="grade_shuffle_options").check().run()
    assert "none of its criteria has options" in texts(at)
    assert at.button(key="grade_launch").disabled
    assert not at.exception, at.exception
