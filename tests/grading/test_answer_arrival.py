"""A call ends for its endpoint's limiter when the provider's answer arrives, not when we have
finished reading it (real litellm HTTP path, local fake provider): the limiter counts what
the provider holds, not answers waiting for our own event loop."""

from __future__ import annotations

import asyncio

import pytest

from grading.errors import ProviderError, TransientProviderError
from grading.limiter import AdaptiveLimiter
from grading.llm import LiteLLMGenerate
from tests.fake_provider import Reply

MODEL = "openai/fake-judge"


def judge(fake, **options) -> LiteLLMGenerate:
    return LiteLLMGenerate(MODEL, api_base=fake.api_base, api_key="test-key", timeout=10.0,
                           **options)


async def test_the_call_has_ended_for_the_limiter_before_the_answer_is_read(fake_provider):
    limiter = AdaptiveLimiter()
    async with limiter.slot():
        result = await judge(fake_provider)("system", "user")
        # Still inside the slot, the answer parsed: the limiter ended the call when the
        # provider's answer came in, and learned from it.
        stats = limiter.stats()
        assert (stats.in_flight, limiter.estimate.samples, stats.throttled) == (0, 1, 0)
    assert "MET" in result.text
    stats = limiter.stats()  # leaving the slot ends nothing a second time
    assert (stats.in_flight, limiter.estimate.samples) == (0, 1)


async def test_a_refusal_is_counted_once_with_its_retry_after(fake_provider):
    fake_provider.enqueue(Reply(status=429, headers={"Retry-After": "3"},
                                error_message="slow down"))
    limiter = AdaptiveLimiter()
    slot = limiter.slot()
    with pytest.raises(TransientProviderError) as raised:
        async with slot:
            try:
                await judge(fake_provider)("system", "user")
            except TransientProviderError as exc:
                assert limiter.stats().throttled == 1  # already, from the answer's status
                slot.throttled(exc.retry_after)  # as the job runner says so: no second count
                raise
    assert raised.value.status_code == 429
    stats = limiter.stats()
    assert (stats.in_flight, stats.throttled, limiter.estimate.samples) == (0, 1, 0)
    assert limiter.estimate.paused_until - limiter.clock() > 2.0


@pytest.mark.parametrize("status", [500, 503, 401])
async def test_a_failed_call_teaches_the_limiter_nothing(fake_provider, status):
    fake_provider.enqueue(Reply(status=status, error_message="scripted failure"))
    limiter = AdaptiveLimiter()
    with pytest.raises((ProviderError, TransientProviderError)):
        async with limiter.slot():
            await judge(fake_provider)("system", "user")
    stats = limiter.stats()
    assert (stats.in_flight, stats.throttled, stats.decreases) == (0, 0, 0)
    assert limiter.estimate.samples == 0  # no sample of how long answers take either


async def test_without_our_transport_the_call_ends_when_the_slot_is_left(fake_provider):
    # No byte cap: litellm's own client, which we do not wrap; the slot ends the call.
    limiter = AdaptiveLimiter()
    async with limiter.slot():
        await judge(fake_provider, max_response_bytes=None)("system", "user")
        assert limiter.stats().in_flight == 1
    assert (limiter.stats().in_flight, limiter.estimate.samples) == (0, 1)


async def test_a_call_after_the_slot_was_left_does_not_touch_its_limiter(fake_provider):
    limiter = AdaptiveLimiter()
    async with limiter.slot():
        await judge(fake_provider)("system", "user")
    await judge(fake_provider)("system", "again, outside any slot")
    assert (limiter.stats().in_flight, limiter.estimate.samples) == (0, 1)


async def test_gathered_slots_each_end_their_own_call(fake_provider):
    fake_provider.latency = 0.05
    limiter = AdaptiveLimiter(ceiling=3)
    generate = judge(fake_provider)

    async def one(i: int) -> str:
        async with limiter.slot():
            return (await generate("system", f"user {i}")).text

    texts = await asyncio.gather(*(one(i) for i in range(12)))
    assert len(texts) == 12 and fake_provider.max_in_flight <= 3
    assert (limiter.stats().in_flight, limiter.estimate.samples) == (0, 12)
