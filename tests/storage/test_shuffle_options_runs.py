"""Launching a run with option shuffling (run setting ``extra.shuffle_options``): the
service refuses it where it does not apply, with a message, and writes nothing."""

from __future__ import annotations

import pytest

from grading.errors import ConfigurationError
from storage.services import runs
from tests.actors import ADMIN
from tests.kinds import MIXED
from tests.storage.helpers import make_dataset, make_rubric


def _launch(sessions, version_id, dataset_id, grader: str, on: object = True):
    return runs.create_run(sessions, rubric_version_id=version_id, dataset_id=dataset_id,
                           grader=grader, model="openai/test-judge",
                           settings={"extra": {"shuffle_options": on}}, actor=ADMIN)


def test_a_run_with_options_to_shuffle_keeps_the_setting(sessions):
    version = make_rubric(sessions, criteria=MIXED)
    dataset, _ = make_dataset(sessions)
    for grader in ("per_criterion", "one_shot"):
        assert _launch(sessions, version.id, dataset.id, grader).settings.shuffle_options


@pytest.mark.parametrize(("criteria", "grader", "on", "message"), [
    pytest.param(MIXED, "rubric_as_judge", True, "rubric-as-judge gives one overall score",
                 id="rubric-as-judge"),
    pytest.param(None, "per_criterion", True, "none of this rubric version's criteria has "
                 "options", id="no-options"),
    pytest.param(MIXED, "per_criterion", "yes", "shuffle_options must be true or false",
                 id="not-a-boolean"),
])
def test_option_shuffling_is_refused_where_it_does_not_apply(sessions, criteria, grader, on,
                                                             message):
    version = (make_rubric(sessions, criteria=criteria) if criteria
               else make_rubric(sessions))
    dataset, _ = make_dataset(sessions)
    with pytest.raises(ConfigurationError, match=message):
        _launch(sessions, version.id, dataset.id, grader, on)
    assert runs.list_runs(sessions) == []
