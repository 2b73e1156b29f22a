"""The endpoint limiter: waiting for slots across event loops, a fake clock, and what worker
processes share through the database (a real SQLite file and a real PostgreSQL)."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta

import pytest

from grading.capacity import Call
from grading.errors import TransientProviderError
from grading.limiter import busy_seconds
from storage import models as m
from storage.jobs.limiter import AdaptiveLimiter, CapacitySharing, endpoint_name, limiter_for


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_limit_ramps_up_from_a_low_start_as_calls_succeed():
    clock = FakeClock()
    limiter = AdaptiveLimiter(clock=clock)
    assert limiter.limit == 4
    held: list[Call] = []
    while clock.now < 1001.0:  # a busy client for one second of 200 ms calls
        while len(held) < limiter.limit:
            held.append(await limiter.acquire())
        clock.now += 0.2 / len(held)  # calls end one after another
        limiter.release(held.pop(0))
    # Slow start doubles the limit every round or so: 4, 8, 16, then more than 24 in one
    # second.
    assert limiter.limit >= 24
    assert limiter.stats().decreases == 0


async def test_a_round_answered_in_one_batch_still_sends_the_next_wave_at_once():
    # An event loop takes in a round's answers one after another before the calls they free
    # start: at the last answer of the opening few calls are in flight, but many wait for a
    # slot. The limit is used; the next wave goes out now, not a round later (traced at a cap
    # of 128: every wave went out a round late, and the ramp took twice as long).
    clock = FakeClock()
    limiter = AdaptiveLimiter(clock=clock, initial=16)
    opening = [await limiter.acquire() for _ in range(16)]
    tasks, order = await _waiting(limiter, 40)
    clock.now += 0.2
    for call in opening:
        limiter.release(call)
    assert (limiter.estimate.limit, limiter.estimate.slots) == (16, 32)  # 16 probes armed
    await asyncio.sleep(0.01)
    assert len(order) == 32 and limiter.stats().in_flight == 32
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_the_limiter_tells_its_estimate_when_the_process_is_busy_for_most_of_a_core():
    clock, cpu = FakeClock(), FakeClock()
    cpu.now = 0.0
    limiter = AdaptiveLimiter(clock=clock, cpu_clock=cpu)

    async def one_call(wall: float, cpu_used: float) -> None:
        call = await limiter.acquire()
        clock.now += wall
        cpu.now += cpu_used
        limiter.release(call)

    await one_call(0.5, 0.5)  # the first call marks where the measurement starts
    await one_call(0.5, 0.5)
    assert not limiter.snapshot().cpu_bound  # less than a second measured: not judged yet
    await one_call(0.6, 0.5)  # 1.0 s of CPU in 1.1 s
    assert limiter.snapshot().cpu_bound
    await one_call(1.0, 0.2)
    assert not limiter.snapshot().cpu_bound
    assert limiter_for("openai/cpu-meter", "http://127.0.0.1:9")._cpu_clock is busy_seconds


def test_busy_seconds_count_this_process_cpu_and_the_time_a_thread_waited_for_a_core():
    start = busy_seconds()
    start_cpu = time.process_time()  # read after: a bracket around the CPU count
    # busy until this process used 0.15 s of CPU (a loaded machine gave a 0.3 s loop of wall
    # time only 0.09 s of it): both grow by at least the CPU used
    deadline = time.perf_counter() + 30
    while time.process_time() - start_cpu < 0.15 and time.perf_counter() < deadline:
        pass
    end_cpu = time.process_time()
    assert busy_seconds() - start >= end_cpu - start_cpu > 0.1

    def waited() -> float:  # Linux, as CI: the time this thread waited for a core is counted
        with open("/proc/thread-self/schedstat") as stats:
            return int(stats.read().split()[1]) / 1e9

    before = waited()
    busy, used = busy_seconds(), time.process_time()
    # (other threads may use a little CPU between the two readings)
    assert before - 0.05 <= busy - used <= waited()


async def test_a_429_inside_a_slot_backs_off_and_honours_retry_after():
    clock = FakeClock()
    limiter = AdaptiveLimiter(clock=clock)
    limiter.estimate.limit, limiter.estimate.slow_start = 20.0, False
    others = [await limiter.acquire() for _ in range(19)]
    with pytest.raises(TransientProviderError):
        async with limiter.slot():  # the 20th call in flight
            raise TransientProviderError("slow down", retry_after=3.0, status_code=429)
    assert limiter.limit == 18 and limiter.stats().throttled == 1
    for call in others:
        limiter.release(call)
    acquiring = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0.05)
    assert not acquiring.done()  # paused: the provider asked for 3 s
    clock.now += 3.01
    await asyncio.wait_for(acquiring, 5)


async def test_a_server_error_teaches_nothing():
    limiter = AdaptiveLimiter()
    with pytest.raises(TransientProviderError):
        async with limiter.slot():
            raise TransientProviderError("bad gateway", status_code=502)
    stats = limiter.stats()
    assert (stats.limit, stats.decreases, stats.in_flight) == (4, 0, 0)


async def test_calls_beyond_the_limit_wait_for_a_free_slot():
    limiter = AdaptiveLimiter(2)
    held = [await limiter.acquire(), await limiter.acquire()]
    third = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0.05)
    assert not third.done() and limiter.stats().in_flight == 2
    limiter.release(held[0])
    await asyncio.wait_for(third, 1)
    assert limiter.stats().in_flight == 2


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


async def _waiting(limiter: AdaptiveLimiter, count: int
                   ) -> tuple[list[asyncio.Task], list[int]]:
    """``count`` tasks queued for a slot, in order; ``order`` lists who got one."""
    order: list[int] = []

    async def wait(i: int) -> Call:
        call = await limiter.acquire()
        order.append(i)
        return call

    tasks = [asyncio.create_task(wait(i)) for i in range(count)]
    await asyncio.sleep(0.01)
    return tasks, order


async def test_calls_ending_together_wake_one_waiter_each_and_the_queue_keeps_its_order():
    # A user gathers a whole dataset: every call waits here. When ten calls end in one
    # turn of the loop, each must wake one waiter: the woken ones have not run yet, so their
    # slots are spoken for. Waking one more per call ended (1 + 2 + ... + 10) sent the
    # excess to the back of the queue: CPU spent on wake-ups, and first come not served.
    limiter = AdaptiveLimiter(10, initial=10)
    held = [await limiter.acquire() for _ in range(10)]
    tasks, order = await _waiting(limiter, 60)
    futures = [w.future for w in limiter._waiters]
    for call in held:
        limiter.release(call)
    assert sum(f.done() for f in futures) == 10
    await asyncio.sleep(0.01)
    assert order == list(range(10))
    for task in tasks[:10]:
        limiter.release(task.result())
    await asyncio.sleep(0.01)
    assert order == list(range(20))
    for task in tasks[10:]:
        task.cancel()
    await asyncio.gather(*tasks[10:], return_exceptions=True)
    assert limiter.stats().in_flight == 10 and not limiter._waiters and limiter._woken == 0


async def test_a_waiter_woken_for_a_slot_that_is_gone_keeps_its_place_at_the_front():
    limiter = AdaptiveLimiter(2)
    held = [await limiter.acquire(), await limiter.acquire()]
    tasks, order = await _waiting(limiter, 3)
    limiter.release(held[0])  # waiter 0 is woken ...
    limiter.set_ceiling(1)  # ... and the slot is gone before it runs (one call still out)
    await asyncio.sleep(0.01)
    assert order == [] and limiter._woken == 0
    limiter.release(held[1])
    await asyncio.sleep(0.01)
    assert order == [0]
    for task in tasks[1:]:
        task.cancel()
    await asyncio.gather(*tasks[1:], return_exceptions=True)
    limiter.release(tasks[0].result())


async def test_a_waiter_cancelled_after_it_was_woken_hands_its_slot_on():
    limiter = AdaptiveLimiter(1)
    held = await limiter.acquire()
    tasks, order = await _waiting(limiter, 2)
    limiter.release(held)  # wakes waiter 0, which is cancelled before it runs
    tasks[0].cancel()
    await asyncio.sleep(0.01)
    assert tasks[0].cancelled() and order == [1] and limiter._woken == 0
    limiter.release(tasks[1].result())
    assert limiter.stats().in_flight == 0


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
    assert limiter_for("openai/judge", "http://127.0.0.1:1/v1/", 8) is a
    assert limiter_for("openai/judge", "http://127.0.0.1:2/v1", 8) is not a
    assert limiter_for("openai/other", "http://127.0.0.1:1/v1", 8) is not a
    limiter_for("openai/judge", "http://127.0.0.1:1/v1", 3)  # a run asking for less
    assert a.stats().ceiling == 3 and a.limit == 3
    limiter_for("openai/judge", "http://127.0.0.1:1/v1", None)  # no cap: discover
    assert a.stats().ceiling is None


def test_concurrency_must_be_positive():
    with pytest.raises(ValueError, match=">= 1"):
        AdaptiveLimiter(0)


# -- sharing between worker processes through the database ------------------------------------
ENDPOINT = endpoint_name("openai/judge", "http://127.0.0.1:9/v1")


def _process(sessions, name: str) -> CapacitySharing:
    """One worker process's limiter and its link to the database."""
    limiter = AdaptiveLimiter(clock=FakeClock())
    limiter.estimate.limit, limiter.estimate.slow_start = 20.0, False
    return CapacitySharing(sessions, limiter, ENDPOINT, name)


def test_a_refusal_seen_by_one_process_backs_the_others_off(sessions):
    a, b = _process(sessions, "a"), _process(sessions, "b")
    a.sync()
    b.sync()  # b now knows a and its count of refusals
    a.limiter.estimate.refused(Call(started=1000.0, level=20), now=1000.1)
    a.sync()
    b.sync()
    assert a.limiter.estimate.limit == pytest.approx(18.0)
    assert b.limiter.estimate.limit == pytest.approx(18.0)  # without a 429 of its own
    b.sync()  # the same refusal is not counted twice
    assert b.limiter.estimate.limit == pytest.approx(18.0)
    for _ in range(3):  # nor echoed back: b's decrease was for a's refusal, not its own
        for process in (a, b):
            process.limiter.clock.now += 5.0  # rounds later
            process.sync()
    assert a.limiter.estimate.limit == pytest.approx(18.0)
    assert b.limiter.estimate.limit == pytest.approx(18.0)


def test_a_retry_after_pause_is_kept_by_every_process(sessions):
    a, b = _process(sessions, "a"), _process(sessions, "b")
    a.limiter.estimate.refused(Call(started=1000.0, level=20), now=1000.0, retry_after=30.0)
    a.sync()
    b.sync()
    assert b.limiter.estimate.paused_until == pytest.approx(1030.0, abs=1.0)


def test_a_new_process_starts_from_what_a_stopped_one_learned(sessions):
    old = _process(sessions, "old")
    old.limiter.estimate.limit = 57.0
    old.sync()
    new = CapacitySharing(sessions, AdaptiveLimiter(clock=FakeClock()), ENDPOINT, "new")
    new.sync(now=m.utcnow() + timedelta(seconds=60))  # "old" stopped a minute ago
    assert new.limiter.estimate.limit == 57.0 and not new.limiter.estimate.slow_start
    # While a peer is alive it keeps its share: a newcomer slow-starts instead of doubling up.
    alive = CapacitySharing(sessions, AdaptiveLimiter(clock=FakeClock()), ENDPOINT, "late")
    alive.sync(now=m.utcnow() + timedelta(seconds=61))
    assert alive.limiter.estimate.limit == 4


def test_a_process_resuming_from_this_machines_memory_starts_cold_beside_a_live_peer(sessions):
    # The peer may be on another machine, where this machine's memory of the endpoint
    # (``grading.capacity_memory``) is not known: taking the whole of it would double up.
    peer = _process(sessions, "peer")
    peer.limiter.estimate.limit = 40.0
    peer.sync()
    limiter = AdaptiveLimiter(clock=FakeClock())
    limiter.estimate.resume(80.0, True)
    assert limiter.estimate.limit == 40
    CapacitySharing(sessions, limiter, ENDPOINT, "resuming").sync()
    assert limiter.estimate.limit == 4 and limiter.estimate.slow_start
    # Alone on the endpoint, it keeps what it resumed from.
    alone = AdaptiveLimiter(clock=FakeClock())
    alone.estimate.resume(80.0, True)
    CapacitySharing(sessions, alone, "other|endpoint|", "alone").sync()
    assert alone.estimate.limit == 40
