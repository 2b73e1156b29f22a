"""A one-shot answer that leaves criteria out keeps the verdicts that came back and asks for
each missing one in a call of its own (issue 36, item 5: a small model answered criteria 1-2
of 5, six times in ten, and the whole grade was lost). Real litellm HTTP path, fake provider."""

from __future__ import annotations

import json

import pytest

from grading import GradingError, Rubric, Verdict
from grading.autograders import PerCriterionOneShotGrader
from grading.llm import LiteLLMGenerate
from grading.option_prompts import one_shot_mixed_response_format
from grading.prompts import (
    ONE_SHOT_SCHEMA_NAME,
    PER_CRITERION_SCHEMA_NAME,
    PER_CRITERION_SYSTEM_PROMPT,
    one_shot_response_format,
)
from tests.fake_provider import Reply, judge_reply

MODEL = "openai/fake-judge"
FAST = {"retry_base_delay": 0.001, "retry_max_delay": 0.01}
REQUIREMENTS = ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"]
RUBRIC = Rubric.from_dict([{"weight": w, "requirement": r}
                           for w, r in zip([4, 3, 2, 1, -1], REQUIREMENTS, strict=True)])
FIRST_TWO = json.dumps({"criteria": [
    {"number": 1, "reason": "alpha is missing", "verdict": "UNMET"},
    {"number": 2, "reason": "beta is there", "verdict": "MET"}]})


def judge(fake) -> LiteLLMGenerate:
    return LiteLLMGenerate(MODEL, api_base=fake.api_base, api_key="test-key", timeout=10.0)


def schema_name(body) -> str:
    return ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")


def user_prompt(body) -> str:
    return body["messages"][-1]["content"]


def answers_first_two(per_criterion=judge_reply):
    """The one-shot call answers criteria 1-2 only; per-criterion calls as ``per_criterion``."""
    def reply(body):
        if schema_name(body) == ONE_SHOT_SCHEMA_NAME:
            return Reply(FIRST_TWO)
        return per_criterion(body)
    return reply


def test_the_one_shot_schema_forces_one_entry_per_criterion():
    schema = one_shot_response_format(count=5)["json_schema"]
    assert schema["strict"] is True
    array = schema["schema"]["properties"]["criteria"]
    assert (array["minItems"], array["maxItems"]) == (5, 5)
    assert array["items"]["properties"]["number"]["enum"] == [1, 2, 3, 4, 5]
    mixed = Rubric.from_dict([{"weight": 1, "requirement": "A"}, {
        "weight": 1, "requirement": "Rate",
        "options": [{"label": "bad", "value": 0}, {"label": "good", "value": 1}]}])
    array = one_shot_mixed_response_format(mixed.criteria, [None, (0, 1)])[
        "json_schema"]["schema"]["properties"]["criteria"]
    assert (array["minItems"], array["maxItems"]) == (2, 2)


async def test_missing_criteria_get_one_call_each_and_the_grade_is_complete(fake_provider):
    fake_provider.default = answers_first_two()
    result = await RUBRIC.grade("answer", autograder=PerCriterionOneShotGrader(
        judge(fake_provider), **FAST))

    assert result.error is None
    assert result.score is not None
    # the verdicts that came back are kept as they were; the rest come from their own calls
    assert [r.verdict for r in result.report] == [Verdict.UNMET, Verdict.MET, Verdict.MET,
                                                 Verdict.MET, Verdict.MET]
    assert [r.reason for r in result.report[:2]] == ["alpha is missing", "beta is there"]
    assert result.raw_score == pytest.approx(3 + 2 + 1 - 1)
    # one one-shot request, then exactly one request per missing criterion
    assert fake_provider.requests == 1 + 3
    first, *rest = fake_provider.bodies
    schema = first["response_format"]["json_schema"]["schema"]["properties"]["criteria"]
    assert (schema["minItems"], schema["maxItems"]) == (5, 5)
    assert all(schema_name(body) == PER_CRITERION_SCHEMA_NAME for body in rest)
    asked = sorted(r for body in rest for r in REQUIREMENTS
                   if f"<criterion>\n{r}\n</criterion>" in user_prompt(body))
    assert asked == ["Delta", "Epsilon", "Gamma"]
    assert all(body["messages"][0]["content"] == PER_CRITERION_SYSTEM_PROMPT for body in rest)
    # and the grade says what happened
    assert "left out criterion number(s) 3, 4, 5 of 5" in result.reason
    assert result.notes == (result.reason,)
    assert result.token_usage.prompt_tokens == 4 * 11  # every call's tokens are counted


async def test_a_complete_answer_costs_one_request_and_no_note(fake_provider):
    result = await RUBRIC.grade("answer", autograder=PerCriterionOneShotGrader(
        judge(fake_provider), **FAST))
    assert result.error is None and result.reason is None and result.notes == ()
    assert fake_provider.requests == 1


async def test_a_missing_criterion_that_cannot_be_judged_leaves_the_grade_incomplete(
        fake_provider):
    def per_criterion(body):
        if "<criterion>\nDelta\n</criterion>" in user_prompt(body):
            return Reply("I would rather not say.")
        return judge_reply(body)
    fake_provider.default = answers_first_two(per_criterion)
    result = await RUBRIC.grade("answer", autograder=PerCriterionOneShotGrader(
        judge(fake_provider), on_error="report", **FAST))

    assert result.score is None  # complete only when every criterion has a verdict
    assert "criterion 4" in result.error
    assert [r.verdict for r in result.report] == [Verdict.UNMET, Verdict.MET, Verdict.MET,
                                                 None, Verdict.MET]
    assert "left out criterion number(s) 3, 4, 5" in result.reason
    assert fake_provider.requests == 1 + 2 + 3  # Delta: first try and two retries


async def test_in_raise_mode_an_unjudgeable_missing_criterion_raises(fake_provider):
    fake_provider.default = answers_first_two(lambda body: Reply("no JSON here"))
    with pytest.raises(GradingError, match=r"criterion [345]"):
        await RUBRIC.grade("answer", autograder=PerCriterionOneShotGrader(
            judge(fake_provider), **FAST))


async def test_fallback_verdicts_cover_a_missing_criterion_that_cannot_be_judged(
        fake_provider):
    fake_provider.default = answers_first_two(lambda body: Reply("no JSON here"))
    result = await RUBRIC.grade("answer", autograder=PerCriterionOneShotGrader(
        judge(fake_provider), default_fallback_verdicts={"positive": "UNMET",
                                                         "negative": "MET"}, **FAST))
    assert [r.verdict for r in result.report] == [Verdict.UNMET, Verdict.MET, Verdict.UNMET,
                                                 Verdict.UNMET, Verdict.MET]
    assert "fallback verdicts used for 3 of 5" in result.error
    assert result.report[1].error is None  # a verdict that came back is not a fallback


async def test_an_answer_with_no_verdict_at_all_is_asked_again_as_one_shot(fake_provider):
    fake_provider.enqueue(json.dumps({"criteria": []}))
    result = await RUBRIC.grade("answer", autograder=PerCriterionOneShotGrader(
        judge(fake_provider), **FAST))
    assert result.error is None and result.reason is None
    assert [schema_name(b) for b in fake_provider.bodies] == [ONE_SHOT_SCHEMA_NAME] * 2


async def test_a_left_out_rated_criterion_is_asked_with_its_options(fake_provider):
    rubric = Rubric.from_dict([
        {"weight": 2, "requirement": "Alpha"},
        {"weight": 1, "requirement": "Rate the tone",
         "options": [{"label": "cold", "value": 0}, {"label": "warm", "value": 1}]}])

    def reply(body):
        if schema_name(body) == ONE_SHOT_SCHEMA_NAME:
            return Reply(json.dumps({"criteria": [
                {"number": 1, "reason": "alpha is there", "verdict": "MET"}]}))
        return judge_reply(body)  # a rating: the first option listed
    fake_provider.default = reply
    result = await rubric.grade("answer", autograder=PerCriterionOneShotGrader(
        judge(fake_provider), **FAST))
    assert result.error is None
    assert result.report[0].verdict is Verdict.MET
    assert result.report[1].multi_choice_verdict.selected_label == "cold"
    assert fake_provider.requests == 2
    assert "option" in fake_provider.bodies[1]["response_format"]["json_schema"]["schema"][
        "properties"]


async def test_an_entry_that_copied_the_placeholder_is_asked_again_on_its_own(fake_provider):
    # what SmolLM2-135M answered under a schema that forced both entries
    copied = json.dumps({"criteria": [
        {"number": 1, "reason": "<one or two sentences>", "verdict": "MET"},
        {"number": 2, "reason": "beta is there", "verdict": "MET"}]})
    rubric = Rubric.from_dict([{"weight": 2, "requirement": "Alpha"},
                               {"weight": 1, "requirement": "Beta"}])
    fake_provider.enqueue(copied)
    result = await rubric.grade("answer", autograder=PerCriterionOneShotGrader(
        judge(fake_provider), **FAST))
    assert result.error is None
    assert [r.reason for r in result.report] == ["the response does this", "beta is there"]
    assert fake_provider.requests == 2
    assert "<criterion>\nAlpha\n</criterion>" in user_prompt(fake_provider.bodies[1])
    assert ("copied the answer format's placeholder instead of judging criterion number(s) 1"
            in result.reason)
    assert "left out" not in result.reason


REFUSAL = ("Invalid schema for response_format 'criteria_verdicts': In context=('properties', "
           "'criteria'), 'minItems' is not permitted.")


@pytest.mark.parametrize("mode", ["auto", "json_schema"])
async def test_a_provider_refusing_min_items_gets_the_schema_without_them(fake_provider, mode):
    fake_provider.enqueue(Reply(status=400, error_message=REFUSAL))
    grader = PerCriterionOneShotGrader(LiteLLMGenerate(
        MODEL, api_base=fake_provider.api_base, api_key="test-key", timeout=10.0,
        structured_output=mode), **FAST)
    first = await RUBRIC.grade("answer", autograder=grader)
    second = await RUBRIC.grade("answer", autograder=grader)
    assert first.error is None and second.error is None
    refused, *loose = [b["response_format"] for b in fake_provider.bodies]
    assert refused["json_schema"]["schema"]["properties"]["criteria"]["minItems"] == 5
    assert len(loose) == 2  # one refused request, then straight to what the provider takes
    for sent in loose:
        assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
        criteria = sent["json_schema"]["schema"]["properties"]["criteria"]
        assert "minItems" not in criteria and "maxItems" not in criteria
        assert "pattern" not in criteria["items"]["properties"]["reason"]
        assert criteria["items"]["properties"]["number"]["enum"] == [1, 2, 3, 4, 5]
