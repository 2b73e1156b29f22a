"""A judge that copies the answer format's placeholder ("<one or two sentences>") has not
judged: the answer is a parse failure with that reason, asked again, never stored (issue 36,
item 6). Parsers table-tested; the three graders through the real litellm HTTP path."""

from __future__ import annotations

import json

import pytest

from grading import Rubric, Verdict
from grading.autograders import (
    PerCriterionGrader,
    PerCriterionOneShotGrader,
    RubricAsJudgeGrader,
)
from grading.llm import LiteLLMGenerate
from grading.option_parsing import parse_option_answer
from grading.option_prompts import option_user_prompt
from grading.parsing import (
    ParseError,
    parse_criteria_answer,
    parse_holistic_answer,
    parse_verdict_answer,
)
from grading.placeholders import ECHO_MESSAGE, PLACEHOLDERS
from grading.prompts import holistic_user_prompt, one_shot_user_prompt, per_criterion_user_prompt
from tests.fake_provider import Reply

MODEL = "openai/fake-judge"
FAST = {"retry_base_delay": 0.001, "retry_max_delay": 0.01}
RUBRIC = Rubric.from_dict([
    {"weight": 10, "requirement": "Alpha"},
    {"weight": -3, "requirement": "Gamma"},
])
ECHOED = '{"reason": "<one or two sentences>", "verdict": "MET"}'


def judge(fake) -> LiteLLMGenerate:
    return LiteLLMGenerate(MODEL, api_base=fake.api_base, api_key="test-key", timeout=10.0)


def test_every_placeholder_the_parser_knows_is_written_in_a_prompt():
    criteria = RUBRIC.criteria
    prompts = (per_criterion_user_prompt(criteria[0], "x") + one_shot_user_prompt(criteria, "x")
               + holistic_user_prompt(criteria, "x"))
    rated = Rubric.from_dict([{"weight": 1, "requirement": "Rate", "options": [
        {"label": "bad", "value": 0}, {"label": "good", "value": 1}]}]).criteria[0]
    prompts += option_user_prompt(rated, "x", order=(0, 1))
    assert all(placeholder in prompts for placeholder in PLACEHOLDERS)


@pytest.mark.parametrize("text", [
    pytest.param(ECHOED, id="reason-copied"),
    pytest.param('{"reason": "  <One or two   sentences> ", "verdict": "UNMET"}',
                 id="case-and-spaces"),
    pytest.param('{"reason": "one or two sentences.", "verdict": "MET"}', id="no-brackets"),
    pytest.param('{"reason": "<one or two sentences> The dose is stated.", "verdict": "MET"}',
                 id="placeholder-then-text"),
    pytest.param('{"reason": "<your reason here>", "verdict": "MET"}', id="any-template-slot"),
    pytest.param('{"reason": "fine", "verdict": "<\\"MET\\" or \\"UNMET\\">"}',
                 id="verdict-slot-copied"),
    pytest.param('Sure: {"explanation": "<one or two sentences>", "criterion_status": "MET"}',
                 id="rubric-keys-in-prose"),
])
def test_a_verdict_answer_echoing_the_placeholder_is_a_parse_failure(text):
    with pytest.raises(ParseError, match=ECHO_MESSAGE):
        parse_verdict_answer(text)


@pytest.mark.parametrize("text", [
    pytest.param('{"reason": "It says <b>200 mg</b>, one or two sentences in.", '
                 '"verdict": "MET"}', id="angle-brackets-inside-a-real-reason"),
    pytest.param('{"reason": "The dose is < 5 mg and > 1 mg.", "verdict": "MET"}',
                 id="comparison-signs"),
])
def test_real_reasons_with_angle_brackets_still_parse(text):
    assert parse_verdict_answer(text)[0] is Verdict.MET


def test_one_shot_and_holistic_and_option_answers_echoing_a_placeholder_fail():
    one_shot = json.dumps({"criteria": [
        {"number": 1, "reason": "stated", "verdict": "MET"},
        {"number": 2, "reason": "<one or two sentences>", "verdict": "UNMET"}]})
    with pytest.raises(ParseError, match=ECHO_MESSAGE):
        parse_criteria_answer(one_shot, 2)
    with pytest.raises(ParseError, match=ECHO_MESSAGE):
        parse_holistic_answer('{"score": 70, "reason": "<two or three sentences>"}')
    with pytest.raises(ParseError, match=ECHO_MESSAGE):
        parse_holistic_answer('{"score": "<a number from 0 to 100>", "reason": "ok"}')
    rated = Rubric.from_dict([{"weight": 1, "requirement": "Rate", "options": [
        {"label": "bad", "value": 0}, {"label": "good", "value": 1}]}]).criteria[0]
    with pytest.raises(ParseError, match=ECHO_MESSAGE):
        parse_option_answer('{"reason": "<one or two sentences>", "option": "good"}',
                            options=rated.options, order=(0, 1))


async def test_per_criterion_grader_asks_again_and_never_stores_the_placeholder(fake_provider):
    fake_provider.enqueue(ECHOED)  # the first call copies the format; the rest judge
    result = await RUBRIC.grade("answer", autograder=PerCriterionGrader(
        judge(fake_provider), max_concurrency=1, **FAST))
    assert result.error is None
    assert fake_provider.requests == 3  # the copied answer was asked again once
    assert all(r.reason == "the response does this" for r in result.report)


async def test_a_judge_that_always_copies_the_placeholder_fails_with_that_reason(
        fake_provider):
    fake_provider.default = lambda body: Reply(ECHOED)
    result = await RUBRIC.grade("answer", autograder=PerCriterionGrader(
        judge(fake_provider), on_error="report", **FAST))
    assert result.score is None
    assert ECHO_MESSAGE in result.error
    assert all(r.verdict is None and ECHO_MESSAGE in r.error for r in result.report)
    assert fake_provider.requests == 2 * 3  # two criteria, first try + 2 retries each


async def test_one_shot_grader_refuses_a_copied_placeholder(fake_provider):
    copied = json.dumps({"criteria": [
        {"number": n, "reason": "<one or two sentences>", "verdict": "MET"} for n in (1, 2)]})
    fake_provider.default = lambda body: Reply(copied)
    result = await RUBRIC.grade("answer", autograder=PerCriterionOneShotGrader(
        judge(fake_provider), on_error="report", **FAST))
    assert result.score is None
    assert ECHO_MESSAGE in result.error
    assert all(r.verdict is None for r in result.report)


async def test_holistic_grader_refuses_a_copied_placeholder(fake_provider):
    fake_provider.default = lambda body: Reply(
        '{"score": 100, "reason": "<two or three sentences>"}')
    result = await RUBRIC.grade("answer", autograder=RubricAsJudgeGrader(
        judge(fake_provider), on_error="report", **FAST))
    assert result.score is None
    assert ECHO_MESSAGE in result.error
    assert fake_provider.requests == 3
