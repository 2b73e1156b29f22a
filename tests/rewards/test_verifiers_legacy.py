"""The verifiers 0.3 reward functions inside the real verifiers 0.3.1's vf.Rubric.score_group
and score_rollout (own venv), with the local fake provider as the judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from grading import ConfigurationError, Rubric
from grading.rewards import RubricReward
from grading.rewards.verifiers_legacy import group_reward_func, reward_func
from tests.compat.venvs import run_driver
from tests.fake_provider import Reply
from tests.rewards.conftest import DRIVER_ENV
from tests.rewards.test_verifiers import RUBRIC_YAML, judge

DRIVER = Path(__file__).parent / "drivers" / "verifiers_legacy_driver.py"


def _run(python, provider, tmp_path, replies, on_failure=0.0):
    path = tmp_path / "rubric.yaml"
    path.write_text(RUBRIC_YAML)
    return run_driver(python, DRIVER, {"rubric_path": str(path), "base_url": provider.api_base,
                                       "prompt": "How much?", "replies": replies,
                                       "on_failure": on_failure}, env=DRIVER_ENV)


def test_group_scoring_grades_duplicates_once_and_reports_verdicts(
        verifiers03_python, fake_provider, tmp_path):
    fake_provider.default = judge
    out = _run(verifiers03_python, fake_provider, tmp_path,
               ["Take 5 mg.", "Drink bleach.", "Take 5 mg."])
    assert out["is_group"] == [True, True]
    assert [s["reward"] for s in out["group"]] == [1.0, 0.0, 1.0]
    assert out["group"][0]["metrics"] == {"workbench_rubric": 1.0,
                                          "workbench_rubric_failed": 0.0}
    assert out["group"][1]["workbench"]["verdicts"] == {"dose": "UNMET", "harm": "MET"}
    assert out["single"]["reward"] == 1.0 and out["single"]["workbench"]["cached"]
    assert fake_provider.requests == 4  # two distinct completions x two criteria


def test_a_failed_judgment_is_the_chosen_value_and_flagged(
        verifiers03_python, fake_provider, tmp_path):
    fake_provider.default = lambda body: Reply("no JSON")
    out = _run(verifiers03_python, fake_provider, tmp_path, ["Take 5 mg."], on_failure=-1.0)
    (state,) = out["group"]
    assert state["reward"] == -1.0
    assert state["metrics"]["workbench_rubric_failed"] == 1.0
    assert state["workbench"]["failed"] is True


def test_raising_is_refused_because_verifiers_0_3_would_score_it_zero():
    reward = RubricReward(Rubric.from_dict([{"requirement": "a"}]), lambda s, u: "")
    for factory in (reward_func, group_reward_func):
        with pytest.raises(ConfigurationError, match="scores a reward function that raises as 0"):
            factory(reward)


def test_the_answer_column_is_the_judges_reference_answer(verifiers03_python, fake_provider,
                                                          tmp_path):
    from tests.rewards.test_verifiers import REFERENCE_YAML, reference_judge

    fake_provider.default = reference_judge
    path = tmp_path / "rubric.yaml"
    path.write_text(REFERENCE_YAML)
    out = run_driver(verifiers03_python, DRIVER, {
        "rubric_path": str(path), "base_url": fake_provider.api_base, "prompt": "How much?",
        "replies": ["Take 5 mg.", "Take 5 mg.", "Take 5 mg."],
        "answers": ["5 mg", "50 mg", ""], "on_failure": 0.0}, env=DRIVER_ENV)
    verdicts = [s["workbench"]["verdicts"]["correct"] for s in out["group"]]
    # The same text against another reference is judged again, not served from the cache.
    assert verdicts == ["MET", "UNMET", "CANNOT_ASSESS"]
    assert [s["reward"] for s in out["group"]] == [1.0, 0.0, 0.0]
