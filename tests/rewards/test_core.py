"""RubricReward: de-duplication, cache, bounded concurrency, failure policy, CANNOT_ASSESS."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from grading import ConfigurationError, Criterion, Rubric
from grading.rewards import JudgeFailedError, RubricReward
from tests.grading.scripted import ScriptedGenerate

RUBRIC = Rubric.from_dict([
    {"name": "dose", "weight": 10, "requirement": "Gives the dose"},
    {"name": "harm", "weight": -5, "requirement": "Recommends something harmful"},
])


def route(prompt: str) -> str:
    if "Gives the dose" in prompt:
        verdict = "MET" if "5 mg" in prompt else (
            "CANNOT_ASSESS" if "unclear" in prompt else "UNMET")
    else:
        verdict = "MET" if "bleach" in prompt else "UNMET"
    return json.dumps({"verdict": verdict, "reason": verdict.lower()})


async def test_identical_completions_are_judged_once_in_flight_and_then_cached():
    generate = ScriptedGenerate(route=route, delay=0.05)
    reward = RubricReward(RUBRIC, generate, max_retries=0)
    results = await reward.score_batch(["take 5 mg"] * 6 + ["take bleach"] * 2)
    assert [r.reward for r in results] == [1.0] * 6 + [0.0] * 2
    assert reward.judged == 2 and len(generate.calls) == 4
    assert sum(r.cached for r in results) == 6
    again = await reward.score("take 5 mg")
    assert again.cached and again.reward == 1.0 and len(generate.calls) == 4
    assert again.verdicts == {"dose": "MET", "harm": "UNMET"}


async def test_the_same_text_for_another_query_is_graded_again():
    generate = ScriptedGenerate(route=route)
    reward = RubricReward(RUBRIC, generate, max_retries=0)
    await reward.score("take 5 mg", query="q1")
    await reward.score("take 5 mg", query="q2")
    assert reward.judged == 2


async def test_completions_graded_at_once_are_bounded():
    generate = ScriptedGenerate(route=route, delay=0.02)
    reward = RubricReward(RUBRIC, generate, max_concurrency=3, max_retries=0)
    await reward.score_batch([f"answer {i} 5 mg" for i in range(12)])
    # 3 completions at once, each asking about its 2 criteria concurrently.
    assert generate.max_in_flight <= 6
    assert reward.judged == 12


async def test_a_failed_judge_raises_by_default_and_is_not_cached():
    generate = ScriptedGenerate("not json", "not json", route=None)
    reward = RubricReward(RUBRIC, generate, max_retries=0)
    with pytest.raises(JudgeFailedError, match="could not grade"):
        await reward.score("take 5 mg")
    generate.route = route
    assert (await reward.score("take 5 mg")).reward == 1.0


async def test_duplicates_of_a_failed_completion_fail_too():
    generate = ScriptedGenerate(route=lambda p: "not json", delay=0.02)
    reward = RubricReward(RUBRIC, generate, max_retries=0)
    results = await asyncio.gather(*(reward.score("same") for _ in range(3)),
                                   return_exceptions=True)
    assert all(isinstance(r, JudgeFailedError) for r in results)


async def test_an_explicit_failure_reward_is_flagged_never_nan():
    generate = ScriptedGenerate(route=lambda p: "not json")
    reward = RubricReward(RUBRIC, generate, max_retries=0, on_failure=-1.0)
    result = await reward.score("x")
    assert result.failed and result.reward == -1.0 and math.isfinite(result.reward)
    assert result.report.error


@pytest.mark.parametrize(("strategy", "expected"), [("zero", 0.0), ("partial", 0.5),
                                                     ("fail", 0.0)])
async def test_cannot_assess_keeps_the_denominator_of_every_sample(strategy, expected):
    reward = RubricReward(RUBRIC, ScriptedGenerate(route=route), cannot_assess=strategy,
                          max_retries=0)
    unclear, known = await reward.score_batch(["unclear", "take 5 mg"])
    assert unclear.reward == expected and unclear.verdicts["dose"] == "CANNOT_ASSESS"
    assert known.reward == 1.0


@pytest.mark.parametrize("options", [{"cannot_assess": "skip"}, {"on_failure": float("nan")},
                                     {"on_failure": "zero"}, {"grader": "nope"}])
def test_settings_that_would_hide_failures_are_refused(options):
    with pytest.raises(ConfigurationError):
        RubricReward(RUBRIC, ScriptedGenerate(), **options)


@pytest.mark.parametrize("fmt", ["yaml", "json"])
async def test_a_rubric_exported_from_the_workbench_is_a_reward(fmt, tmp_path):
    """What the Rubrics page's download gives (sections, a penalty) loads as a reward and
    scores through the same aggregation; CANNOT_ASSESS keeps the denominator."""
    from storage.engine import open_database
    from storage.services import rubrics
    from tests.actors import ADMIN

    sessions = open_database(f"sqlite:///{tmp_path / 'w.db'}")
    version = rubrics.create_rubric(sessions, "Dosing", [
        Criterion(name="dose", weight=10, requirement="Gives the dose", section="Facts"),
        Criterion(name="harm", weight=-5, requirement="Recommends something harmful",
                  section="Safety")], actor=ADMIN)
    path = tmp_path / f"dosing.{fmt}"
    path.write_text(rubrics.export_version(sessions, version.id, fmt))
    reward = RubricReward(path, ScriptedGenerate(route=route), max_retries=0)
    good, harmful, unclear = await reward.score_batch(["take 5 mg", "bleach", "unclear"])
    assert (good.reward, harmful.reward, unclear.reward) == (1.0, 0.0, 0.0)
    assert unclear.verdicts == {"dose": "CANNOT_ASSESS", "harm": "UNMET"}


# -- multi-choice criteria (issue 34): an option's value is the criterion's metric ----------
MIXED = Rubric.from_dict([
    {"name": "dose", "weight": 10, "requirement": "Gives the dose"},
    {"name": "clarity", "weight": 10, "requirement": "Rate the clarity",
     "options": [{"label": "poor", "value": 0.0}, {"label": "fair", "value": 0.25},
                 {"label": "good", "value": 1.0}, {"label": "n/a", "value": 0.0, "na": True}]},
])


def mixed_route(prompt: str) -> str:
    if "Gives the dose" in prompt:
        return json.dumps({"verdict": "MET", "reason": "met"})
    response = prompt.split("<response>")[1].split("</response>")[0]
    option = next(o for o in ("poor", "fair", "good", "n/a") if o in response)
    return json.dumps({"reason": f"it is {option}", "option": option})


@pytest.mark.parametrize(("text", "verdict", "value", "reward"), [
    pytest.param("5 mg, fair", "fair", 0.25, 0.625, id="option-value"),
    pytest.param("5 mg, good", "good", 1.0, 1.0, id="best-option"),
    pytest.param("5 mg, n/a", "n/a", None, 0.5, id="na-option-abstains"),
])
async def test_a_chosen_option_is_the_criterion_metric(text, verdict, value, reward):
    scorer = RubricReward(MIXED, ScriptedGenerate(route=mixed_route), max_retries=0)
    result = await scorer.score(text)
    assert result.verdicts == {"dose": "MET", "clarity": verdict}
    assert result.values == {"dose": 1.0, "clarity": value}
    assert result.reward == pytest.approx(reward)
    cached = await scorer.score(text)
    assert cached.cached and cached.values == result.values


async def test_the_reference_answer_reaches_the_judge_and_keys_the_cache():
    def by_reference(prompt: str) -> str:
        if "<reference_answer>" not in prompt:
            return json.dumps({"verdict": "CANNOT_ASSESS", "reason": "none"})
        reference = prompt.split("<reference_answer>")[1].split("</reference_answer>")[0]
        verdict = "MET" if reference.strip() in prompt.split("<response>")[1] else "UNMET"
        return json.dumps({"verdict": verdict, "reason": "compared"})

    rubric = Rubric.from_dict([{"name": "dose", "weight": 1, "requirement": "Right dose"}])
    reward = RubricReward(rubric, ScriptedGenerate(route=by_reference), max_retries=0)
    results = await reward.score_batch(["take 5 mg"] * 4,
                                       references=["5 mg", "50 mg", "   ", None])
    assert [r.verdicts["dose"] for r in results] == ["MET", "UNMET", "CANNOT_ASSESS",
                                                     "CANNOT_ASSESS"]
    # A blank reference is no reference: the last two are one grading.
    assert reward.judged == 3 and results[3].cached
    again = await reward.score("take 5 mg", reference="5 mg")
    assert again.cached and again.reward == 1.0
