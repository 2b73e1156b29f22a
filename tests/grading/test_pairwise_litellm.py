"""Rubric.compare over the real litellm HTTP path against the local fake provider."""

from __future__ import annotations

import json

import pytest

from grading import Rubric, TokenUsage
from grading.llm import LiteLLMGenerate
from grading.pairwise import PairwiseGrader
from tests.fake_provider import Reply, judge_reply

RUBRIC = Rubric.from_dict([{"name": "complete", "requirement": "Covers every step",
                            "weight": 4},
                           {"name": "rude", "requirement": "Insults the reader", "weight": -2}])


def judge(fake, **kwargs) -> PairwiseGrader:
    generate = LiteLLMGenerate("openai/fake-judge", api_base=fake.api_base, api_key="test-key",
                               timeout=10.0)
    return PairwiseGrader(generate, retry_base_delay=0.001, retry_max_delay=0.01, **kwargs)


async def test_compare_through_litellm_sends_both_orders_with_the_preference_schema(
        fake_provider):
    report = await RUBRIC.compare("short", "a longer answer", grader=judge(fake_provider),
                                  query="How?")

    assert fake_provider.requests == 4
    formats = [b["response_format"] for b in fake_provider.bodies]
    assert {f["json_schema"]["name"] for f in formats} == {"pairwise_preference"}
    assert formats[0]["json_schema"]["schema"]["properties"]["preference"]["enum"] == [
        "A", "B", "TIE"]
    assert all(b["max_tokens"] == 320 for b in fake_provider.bodies)  # a verdict's budget
    prompts = [b["messages"][-1]["content"] for b in fake_provider.bodies]
    assert sum(p.index("short") < p.index("a longer answer") for p in prompts) == 2
    assert [(p.first, p.second, p.preference, p.consistent) for p in report.preferences] == [
        ("B", "A", "B", True)] * 2
    assert (report.winner, report.calls) == ("B", 4)
    assert report.token_usage == TokenUsage(prompt_tokens=44, completion_tokens=28,
                                            total_tokens=72)


async def test_an_unusable_answer_is_asked_again_then_fails_only_that_order(fake_provider):
    def reply(body):  # "C" on the first criterion whenever A is shown first
        prompt = body["messages"][-1]["content"]
        if "Covers every step" in prompt and "<response_a>\none\n" in prompt:
            return Reply(json.dumps({"reason": "r", "preference": "C"}))
        return judge_reply(body)

    fake_provider.default = reply

    report = await RUBRIC.compare("one", "two words", grader=judge(
        fake_provider, max_retries=1, on_error="report"))

    failed = report.preferences[0]
    assert (failed.first, failed.second, failed.preference) == (None, "A", None)
    assert failed.error.startswith("A shown first:") and "'C'" in failed.error
    assert report.preferences[1].preference == "B"
    assert report.failed_count == 1 and report.score == 1.0
    assert fake_provider.requests == 5


async def test_a_provider_refusing_the_key_raises_in_raise_mode(fake_provider):
    fake_provider.required_api_key = "another-key"
    from grading import ProviderError

    with pytest.raises(ProviderError):
        await RUBRIC.compare("one", "two", grader=judge(fake_provider))
    assert fake_provider.requests >= 1
