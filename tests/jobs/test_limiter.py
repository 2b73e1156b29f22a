"""The adaptive limiter: halve on 429 once per round, honour Retry-After, recover additively."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from storage.jobs.limiter import AdaptiveLimiter, limiter_for


async def test_a_429_halves_the_limit_once_per_round():
    limiter = AdaptiveLimiter(8)
    starts = [await limiter.acquire() for _ in range(8)]
    limiter.release(starts[0], throttled=True)
    assert limiter.limit == 4
    # Another 429 from a call that started before the decrease: the same round, no new halving.
    limiter.release(starts[1], throttled=True)
    assert limiter.limit == 4
    later = await asyncio.wait_for(_acquire_when_free(limiter, starts[2:]), 1)
    limiter.release(later, throttled=True)
    assert limiter.limit == 2
    stats = limiter.stats()
    assert (stats.decreases, stats.throttled, stats.lowest_limit) == (2, 3, 2)


async def _acquire_when_free(limiter: AdaptiveLimiter, held: list[float]) -> float:
    for started in held:
        limiter.release(started)
    return await limiter.acquire()


async def test_the_limit_never_drops_below_one_and_recovers_to_the_ceiling():
    limiter = AdaptiveLimiter(4)
    for _ in range(5):
        started = await limiter.acquire()
        limiter.release(started, throttled=True)
    assert limiter.limit == 1
    successes = 0
    while limiter.limit < 4:
        started = await limiter.acquire()
        limiter.release(started)
        successes += 1
    # Additive increase (limit += 1/limit): about one slot per round of `limit` successes,
    # 1 + 2 + 3 = 6 calls; the fractional steps make it 7.
    assert 6 <= successes <= 7
    for _ in range(10):
        limiter.release(await limiter.acquire())
    assert limiter.stats().limit == 4.0  # capped at the ceiling


async def test_calls_beyond_the_limit_wait_for_a_free_slot():
    limiter = AdaptiveLimiter(2)
    held = [await limiter.acquire(), await limiter.acquire()]
    third = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0.05)
    assert not third.done() and limiter.stats().in_flight == 2
    limiter.release(held[0])
    await asyncio.wait_for(third, 1)
    assert limiter.stats().in_flight == 2


async def test_retry_after_pauses_new_calls():
    limiter = AdaptiveLimiter(4)
    started = await limiter.acquire()
    limiter.release(started, throttled=True, retry_after=0.3)
    before = time.monotonic()
    limiter.release(await limiter.acquire())
    assert time.monotonic() - before >= 0.28


async def test_a_cancelled_waiter_gives_its_turn_to_the_next():
    limiter = AdaptiveLimiter(1)
    held = await limiter.acquire()
    first = asyncio.create_task(limiter.acquire())
    second = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0.01)
    first.cancel()
    limiter.release(held)
    await asyncio.wait_for(second, 1)
    assert first.cancelled()


def test_a_limiter_wakes_waiters_on_another_event_loop():
    limiter = AdaptiveLimiter(1)
    held = asyncio.run(limiter.acquire())
    got: list[float] = []

    def other_loop() -> None:
        got.append(asyncio.run(asyncio.wait_for(limiter.acquire(), 5)))

    thread = threading.Thread(target=other_loop)
    thread.start()
    time.sleep(0.1)
    assert not got
    limiter.release(held)
    thread.join(5)
    assert len(got) == 1


def test_one_limiter_per_endpoint_shared_by_runs():
    a = limiter_for("openai/judge", "http://127.0.0.1:1/v1", 8)
    assert limiter_for("openai/judge", "http://127.0.0.1:1/v1/", None) is a
    assert limiter_for("openai/judge", "http://127.0.0.1:2/v1", 8) is not a
    assert limiter_for("openai/other", "http://127.0.0.1:1/v1", 8) is not a
    limiter_for("openai/judge", "http://127.0.0.1:1/v1", 3)  # a run asking for less
    assert a.stats().ceiling == 3 and a.limit == 3


def test_concurrency_must_be_positive():
    with pytest.raises(ValueError, match=">= 1"):
        AdaptiveLimiter(0)
