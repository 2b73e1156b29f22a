"""The library path discovers the provider's capacity like the job runner: default graders
on one endpoint share one process-wide limiter (real litellm HTTP path, local fake provider)."""

from __future__ import annotations

import asyncio

import pytest

from grading import Criterion, Rubric
from grading.autograders import PerCriterionGrader, RubricAsJudgeGrader
from grading.limiter import AdaptiveLimiter, limiter_for
from grading.llm import LiteLLMGenerate

MODEL = "openai/fake-judge"
RUBRIC = Rubric([Criterion(requirement=f"Requirement {i}") for i in range(4)])


def judge(fake) -> LiteLLMGenerate:
    return LiteLLMGenerate(MODEL, api_base=fake.api_base, api_key="test-key", timeout=10.0)


async def test_gathered_grades_with_a_default_grader_find_the_cap_and_are_rarely_refused(
        fake_provider):
    fake_provider.latency = 0.05
    fake_provider.max_concurrency = 3
    grader = PerCriterionGrader(judge(fake_provider), retry_base_delay=0.01)
    results = await asyncio.gather(*(RUBRIC.grade(f"answer {i}", autograder=grader)
                                     for i in range(30)))
    assert [r.score for r in results] == [1.0] * 30
    # The old fixed default (8 in flight) against a cap of 3 is refused on most calls of a
    # round; discovery starts at 4 and settles at the cap.
    assert fake_provider.max_in_flight >= 3
    assert fake_provider.rate_limited <= 0.1 * fake_provider.requests, (
        fake_provider.rate_limited, fake_provider.requests)
    stats = limiter_for(MODEL, fake_provider.api_base).stats()
    # The discovered limit, not ``limiter.limit``: those are the slots, which include a probe
    # armed above the limit (it goes out only once the limit is full), so they read cap + 2
    # after the limit climbed to cap + 1.
    assert stats.decreases >= 1 and stats.limit <= 4


async def test_what_one_default_grader_learned_paces_the_next(fake_provider):
    fake_provider.latency = 0.05
    fake_provider.max_concurrency = 2
    first = PerCriterionGrader(judge(fake_provider), retry_base_delay=0.01)
    await asyncio.gather(*(RUBRIC.grade(f"a{i}", autograder=first) for i in range(8)))
    assert fake_provider.rate_limited > 0  # it had to find the cap
    fake_provider.rate_limited = fake_provider.max_in_flight = 0
    # Another grader, another kind, same endpoint: it starts from what the first learned.
    second = RubricAsJudgeGrader(judge(fake_provider))
    results = await asyncio.gather(*(RUBRIC.grade(f"b{i}", autograder=second)
                                     for i in range(12)))
    assert all(r.score is not None for r in results)
    assert fake_provider.max_in_flight <= 3
    assert fake_provider.rate_limited <= 2


async def test_a_user_max_concurrency_caps_one_grader(fake_provider):
    fake_provider.latency = 0.05
    grader = PerCriterionGrader(judge(fake_provider), max_concurrency=2)
    await asyncio.gather(*(RUBRIC.grade(f"c{i}", autograder=grader) for i in range(4)))
    assert fake_provider.max_in_flight == 2


async def test_a_custom_generate_fn_keeps_a_fixed_bound():
    in_flight = peak = 0

    async def generate(system_prompt: str, user_prompt: str) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return '{"verdict": "MET", "reason": "ok"}'

    rubric = Rubric([Criterion(requirement=f"R{i}") for i in range(20)])
    assert (await rubric.grade("x", autograder=PerCriterionGrader(generate))).score == 1.0
    assert peak == 8  # the documented default for a generate_fn we cannot see the endpoint of



@pytest.mark.parametrize(("waiting", "opening"), [(200, 4), (1000, 10), (1600, 16)])
async def test_calls_queued_before_the_first_answer_widen_the_opening(waiting, opening):
    # A gather of many grades queues its calls before any answer: the opening grows with
    # them (one call per 100 waiting, 4 to 16), so a long run spends fewer rounds ramping.
    limiter = AdaptiveLimiter()
    held: list = []

    async def one():
        held.append(await limiter.acquire())

    tasks = [asyncio.create_task(one()) for _ in range(waiting)]
    for _ in range(5):  # every task queued, the woken ones started
        await asyncio.sleep(0)
    assert len(held) == opening and limiter.stats().in_flight == opening
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_calls_waiting_for_an_endpoints_first_answer_hold_no_slot(fake_provider):
    # Until an endpoint answered once, ``auto`` calls take turns (its answer teaches the
    # format): the others wait before their limiter slot, so that a slot's level and clock
    # start when its request goes. Before, the opening's calls held slots while they waited
    # and were read as queued a whole answer at a one-slot server.
    fake_provider.latency = 0.5
    grader = PerCriterionGrader(judge(fake_provider), retry_base_delay=0.01)
    grading = asyncio.ensure_future(RUBRIC.grade("answer", autograder=grader))
    limiter = limiter_for(MODEL, fake_provider.api_base)
    while fake_provider.requests < 1:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)  # the other criteria's calls have reached their wait
    assert (fake_provider.requests, limiter.stats().in_flight) == (1, 1)
    assert (await grading).score == 1.0
    # What waited before its slot widened the opening as calls queued at the limiter do.
    assert limiter.estimate.work >= len(RUBRIC.criteria)
