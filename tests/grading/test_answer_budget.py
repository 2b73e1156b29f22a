"""Each judge call asks for no more tokens than its verdict needs (issue 36, item 4): the cap
the provider receives, through the real litellm HTTP path."""

from __future__ import annotations

import pytest

from grading import Rubric
from grading.answer_budget import (
    HOLISTIC_TOKENS,
    ONE_SHOT_BASE_TOKENS,
    ONE_SHOT_TOKENS_PER_CRITERION,
    VERDICT_TOKENS,
)
from grading.autograders import (
    PerCriterionGrader,
    PerCriterionOneShotGrader,
    RubricAsJudgeGrader,
)
from grading.llm import DEFAULT_MAX_TOKENS, LiteLLMGenerate

RUBRIC = Rubric.from_dict([
    {"weight": 3, "requirement": "Alpha"},
    {"weight": 2, "requirement": "Beta"},
    {"weight": -1, "requirement": "Gamma"},
    {"weight": 1, "requirement": "Rate the tone",
     "options": [{"label": "cold", "value": 0}, {"label": "warm", "value": 1}]},
])


def judge(fake, model: str = "openai/fake-judge", **kwargs) -> LiteLLMGenerate:
    return LiteLLMGenerate(model, api_base=fake.api_base, api_key="test-key", timeout=10.0,
                           **kwargs)


def caps(fake) -> list[int | None]:
    return [body.get("max_tokens", body.get("max_completion_tokens")) for body in fake.bodies]


async def test_each_grader_asks_for_what_its_answer_needs(fake_provider):
    await RUBRIC.grade("answer", autograder=PerCriterionGrader(judge(fake_provider)))
    assert caps(fake_provider) == [VERDICT_TOKENS] * 4  # ratings included
    fake_provider.reset()
    binary = Rubric(RUBRIC.criteria[:3])
    await binary.grade("answer", autograder=PerCriterionOneShotGrader(judge(fake_provider)))
    assert caps(fake_provider) == [ONE_SHOT_BASE_TOKENS + 3 * ONE_SHOT_TOKENS_PER_CRITERION]
    fake_provider.reset()
    await RUBRIC.grade("answer", autograder=RubricAsJudgeGrader(judge(fake_provider)))
    assert caps(fake_provider) == [HOLISTIC_TOKENS]
    assert max(VERDICT_TOKENS, HOLISTIC_TOKENS) < 1000 < DEFAULT_MAX_TOKENS


async def test_the_one_shot_cap_grows_with_the_criteria(fake_provider):
    many = Rubric.from_dict([{"weight": 1, "requirement": f"Point {n}"} for n in range(12)])
    await many.grade("answer", autograder=PerCriterionOneShotGrader(judge(fake_provider)))
    assert caps(fake_provider) == [ONE_SHOT_BASE_TOKENS + 12 * ONE_SHOT_TOKENS_PER_CRITERION]


@pytest.mark.parametrize(("setting", "sent"), [
    pytest.param(1500, [1500] * 4, id="a-number-is-every-call's-cap"),
    pytest.param(None, [None] * 4, id="none-sends-no-cap"),
])
async def test_the_cap_is_configurable(fake_provider, setting, sent):
    await RUBRIC.grade("answer", autograder=PerCriterionGrader(
        judge(fake_provider, max_tokens=setting)))
    assert caps(fake_provider) == sent


async def test_a_reasoning_model_gets_its_thinking_budget_on_top(fake_provider):
    await RUBRIC.grade("answer", autograder=RubricAsJudgeGrader(
        judge(fake_provider, "openai/o3-mini", temperature=None, reasoning_tokens=2000)))
    assert caps(fake_provider) == [HOLISTIC_TOKENS + 2000]


def test_a_bad_cap_is_refused():
    with pytest.raises(ValueError, match="max_tokens"):
        LiteLLMGenerate("openai/x", max_tokens=0)


def test_a_loosened_one_shot_schema_still_gets_a_cap_for_its_criteria():
    from grading.answer_budget import answer_tokens
    from grading.prompts import one_shot_response_format
    from grading.structured_output import loosened

    schema = loosened(one_shot_response_format(count=7))  # no maxItems left: the enum counts
    assert answer_tokens(schema) == ONE_SHOT_BASE_TOKENS + 7 * ONE_SHOT_TOKENS_PER_CRITERION
    assert answer_tokens({"type": "json_object"}) is None  # not a grader's call
