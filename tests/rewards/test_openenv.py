"""A workbench rubric as an OpenEnv Rubric, against the real openenv-core 0.3.0 and openenv
0.10.0 (each in its own venv): children, hooks, containers, and an env served by create_app
stepped over HTTP, with the local fake provider as the judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.venvs import ServingDriver
from tests.fake_provider import Reply
from tests.rewards.conftest import DRIVER_ENV
from tests.rewards.test_verifiers import MIXED_YAML, RUBRIC_YAML, judge, mixed_judge

DRIVER = Path(__file__).parent / "drivers" / "openenv_driver.py"
FLAVOURS = ["openenv_core_python", "openenv_python"]


@pytest.fixture(scope="module")
def _drivers():
    """One driver process per flavour for the module's tests (each call is independent: its
    own rubric file, provider and event loop), not one per test: importing OpenEnv takes
    ~5 s a process."""
    started: dict[str, ServingDriver] = {}
    yield started
    for driver in started.values():
        driver.close()


def _run(request, flavour, provider, tmp_path, mode, rubric=RUBRIC_YAML, **extra):
    path = tmp_path / "rubric.yaml"
    path.write_text(rubric)
    drivers = request.getfixturevalue("_drivers")
    if flavour not in drivers:
        drivers[flavour] = ServingDriver(request.getfixturevalue(flavour), DRIVER,
                                         env=DRIVER_ENV)
    return drivers[flavour].call({"rubric_path": str(path), "base_url": provider.api_base,
                                  "mode": mode, **extra})


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_criteria_are_child_rubrics_with_hooks_and_compose_with_containers(
        request, flavour, fake_provider, tmp_path):
    fake_provider.default = judge
    out = _run(request, flavour, fake_provider, tmp_path, "direct")
    assert out["good"] == 1.0
    assert out["children"] == {"dose": [1.0, "MET", "judged MET"],
                               "harm": [0.0, "UNMET", "judged UNMET"]}
    # The hooks fired for the direct call, then again inside WeightedSum (bleach, no dose).
    assert out["hooks"] == [["dose", 1.0], ["all", 1.0], ["dose", 0.0], ["all", 0.0]]
    assert out["weighted"] == 0.5  # 0.5 * 0.0 (bleach) + 0.5 * 1.0
    assert "rubric_0.dose" in out["weighted_names"]
    assert out["gated"] == 0.0
    assert out["sequential"] == 1.0 and "rubric_1.harm" in out["sequential_names"]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_failed_judge_raises_or_gives_the_chosen_flagged_reward(
        request, flavour, fake_provider, tmp_path):
    fake_provider.default = lambda body: Reply("no JSON today")
    out = _run(request, flavour, fake_provider, tmp_path, "failing")
    assert out == {"raised": "JudgeFailedError", "flagged": -1.0, "last_failed": True,
                   "child_scores": [None, None]}


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_an_env_served_with_create_app_rewards_each_step_over_http(
        request, flavour, fake_provider, tmp_path):
    fake_provider.default = judge
    good, harmful, again = _run(request, flavour, fake_provider, tmp_path, "served")
    assert good["status"] == 200 and good["body"]["reward"] == 1.0
    assert good["body"]["observation"]["verdicts"] == {"dose": "MET", "harm": "UNMET"}
    assert harmful["body"]["reward"] == 0.0
    assert again["body"]["reward"] == 1.0
    assert fake_provider.requests == 4  # the repeated answer was not judged again


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(("strategy", "na_score"), [("zero", 0.0), ("fail", 0.0),
                                                    ("partial", 0.5)])
def test_a_chosen_option_is_the_child_score(request, flavour, fake_provider, tmp_path,
                                           strategy, na_score):
    fake_provider.default = mixed_judge
    out = _run(request, flavour, fake_provider, tmp_path, "options", rubric=MIXED_YAML,
               texts=["Take 5 mg, fair.", "Take 5 mg, n/a."], cannot_assess=strategy)
    fair, not_applicable = out["scored"]
    assert fair["children"]["clarity"] == [0.25, "fair"]
    assert fair["children"]["dose"] == [1.0, "MET"]
    assert not_applicable["children"]["clarity"] == [na_score, "n/a"]
    assert out["state"]["criteria"][1]["options"] == ["poor", "fair", "good", "n/a"]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_reference_of_gives_the_judge_the_episodes_reference_answer(
        request, flavour, fake_provider, tmp_path):
    from tests.rewards.test_verifiers import REFERENCE_YAML, reference_judge

    fake_provider.default = reference_judge
    out = _run(request, flavour, fake_provider, tmp_path, "reference", rubric=REFERENCE_YAML,
               pairs=[["Take 5 mg.", "5 mg"], ["Take 5 mg.", "50 mg"], ["Take 5 mg.", ""]])
    assert out == [{"reward": 1.0, "verdict": "MET"}, {"reward": 0.0, "verdict": "UNMET"},
                   {"reward": 0.0, "verdict": "CANNOT_ASSESS"}]
