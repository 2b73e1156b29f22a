"""The queue signal with a fake clock: a server that runs a few calls at once and queues the
rest (no 429, latency ~ calls ahead x service time) brings the limit down to its
parallelism, and keeps it there; latency that varies without rising with the level does
not."""

from __future__ import annotations

import heapq
import random

import pytest

from grading.capacity import CapacityEstimate
from grading.capacity.queue import QUEUE_SAMPLES, queue_parallelism


class QueueingServer:
    """``slots`` calls served at once, each for ``service`` s, the rest queued in order;
    ``race``: the calls started together (no answer between them) reach it in any order."""

    def __init__(self, estimate: CapacityEstimate, slots: int, service: float,
                 race: random.Random | None = None):
        self.estimate, self.slots, self.service = estimate, slots, service
        self.free_at = [0.0] * slots  # when each slot is next free
        self.in_flight: list[tuple[float, object]] = []  # (answer time, call)
        self.levels: list[int] = []
        self.race = race
        self.now = 0.0

    def run(self, calls: int, timeout: float) -> list[float]:
        """Send ``calls`` calls as the estimate allows; the latencies (none beyond
        ``timeout``: a call that would wait longer times out)."""
        now, sent, latencies = self.now, 0, []
        while sent < calls or self.in_flight:
            together = []
            while sent < calls and self.estimate.can_start(now):
                together.append(self.estimate.start(now))
                sent += 1
            if self.race is not None:
                self.race.shuffle(together)
            for call in together:
                self.levels.append(call.level)
                slot = min(range(self.slots), key=self.free_at.__getitem__)
                done = max(now, self.free_at[slot]) + self.service
                self.free_at[slot] = done
                self.in_flight.append((done, call))
            self.in_flight.sort(key=lambda item: item[0])
            now, call = self.in_flight.pop(0)
            latencies.append(now - call.started)
            assert latencies[-1] <= timeout, (latencies[-1], len(latencies))
            self.estimate.succeeded(call, now)
        self.now = now
        return latencies


def test_a_one_slot_server_gets_one_call_at_a_time_once_its_queue_shows():
    estimate = CapacityEstimate()
    estimate.expect(200)
    server = QueueingServer(estimate, slots=1, service=7.0)
    # Before this rule: 24 calls in flight, 54 s of queueing, calls beyond 120 s timed out.
    server.run(200, timeout=6 * 7.0)
    assert estimate.queue_slots == 1 and estimate.limit == 1
    assert max(server.levels[8:]) == 1  # after discovery, one at a time to the end


@pytest.mark.parametrize("seed", range(20))
def test_calls_started_together_may_reach_a_one_slot_server_in_any_order(seed):
    # A wave's requests, sent within milliseconds, are taken in by the server in any order
    # (traced under load: a level-3 call of the opening answered first read as 3 slots, and
    # waves of slow start out of order kept the latency's rise with the level hidden until
    # 16 calls were queued). Before: 1 slot read as 2-4, or calls queued past 8 services.
    estimate = CapacityEstimate()
    server = QueueingServer(estimate, slots=1, service=1.0, race=random.Random(seed))
    # The first call goes alone: it teaches the endpoint's format (``LiteLLMGenerate``'s
    # turn, taken before a slot); the rest wait for its answer holding no slot.
    server.run(1, timeout=1.0)
    server.run(29, timeout=12.0)
    assert estimate.queue_slots == 1 and estimate.limit == 1, server.levels
    assert max(server.levels[-8:]) == 1


@pytest.mark.parametrize("slots", [2, 3, 4, 6, 8])
def test_a_server_with_a_few_slots_gets_about_that_many(slots):
    estimate = CapacityEstimate()
    estimate.expect(400)
    server = QueueingServer(estimate, slots=slots, service=1.0)
    # No call waits 8 service times (a local model's 7 s against a 120 s timeout: 17).
    server.run(400, timeout=8.0)
    assert estimate.queue_slots is not None
    # Read within a factor of two (a fake clock: the same every run): calls answered at
    # the same moment are taken in one after another, so a call may start at a level
    # above the server's slots and still not queue (3 slots read as 5, 6 as 11; 2, 4 and
    # 8 exactly). Over it, calls queue for at most one more service time: none times out.
    assert slots * 0.5 <= estimate.limit <= slots * 2, estimate.limit


def test_latency_that_varies_without_a_queue_leaves_the_limit_growing():
    rng = random.Random(7)  # answers of 1-5 s whatever the level: a hosted provider
    samples = [(level, rng.uniform(1.0, 5.0)) for level in range(1, 33)]
    assert queue_parallelism(samples) is None
    estimate = CapacityEstimate()
    now = 0.0
    for _ in range(20):  # rounds of calls answered in 1-5 s
        calls = [estimate.start(now) for _ in range(estimate.slots)]
        for call in calls:
            estimate.succeeded(call, now + rng.uniform(1.0, 5.0))
        now += 5.0
    assert estimate.queue_slots is None and estimate.limit >= 64


def test_a_small_rise_with_many_calls_is_not_a_queue():
    # Our own event loop takes in the answers one after another: 2 ms each on 0.2 s (the
    # signal holds the last QUEUE_SAMPLES answers).
    assert queue_parallelism([(n, 0.2 + 0.002 * n)
                              for n in range(1, QUEUE_SAMPLES + 1)]) is None
    # A rise of a tenth of a second is cheaper than the parallelism a cut gives up.
    assert queue_parallelism([(n, 0.025 * n) for n in range(1, 5)]) is None


def test_the_parallelism_is_read_off_a_queue():
    assert queue_parallelism([(n, 0.3 * n) for n in range(1, 5)]) == 1
    # 4 slots: levels 1-4 answered in one service time, 5-8 in two (read low: the levels
    # of queued calls count the ones served ahead of them only in part).
    assert queue_parallelism([(n, 0.5 * (1 + (n - 1) // 4)) for n in range(1, 9)]) in (2, 3, 4)


def test_a_process_busy_for_most_of_a_core_is_its_own_queue():
    estimate = CapacityEstimate()
    estimate.cpu_watched = True  # as the limiter does: no verdict before the first measure
    calls = [estimate.start(0.0) for _ in range(4)]
    for n, call in enumerate(calls[:3], start=1):
        estimate.succeeded(call, 0.3 * n)
    assert estimate.queue_slots is None
    estimate.own_cpu(True)
    estimate.succeeded(calls[3], 1.2)
    assert estimate.queue_slots is None  # busy: our own loop's queue


def _reads_a_queue_at_a_hosted_provider(seed: int, low: float, high: float) -> bool:
    """600 calls at a provider that never queues (each answer takes ``low``-``high`` s,
    whatever the level): does the estimate ever read a queue?"""
    rng = random.Random(seed)
    estimate = CapacityEstimate()
    estimate.expect(600)
    now, todo, in_flight, order = 0.0, 600, [], 0
    while todo or in_flight:
        while todo and estimate.can_start(now):
            estimate.waiting = todo - 1
            call = estimate.start(now)
            todo -= 1
            heapq.heappush(in_flight, (now + rng.uniform(low, high), order, call))
            order += 1
        now, _, call = heapq.heappop(in_flight)
        estimate.waiting = todo
        estimate.succeeded(call, now)
        if estimate.queue_slots is not None:
            return True
    return False


@pytest.mark.parametrize(("low", "high"), [(1.0, 5.0), (2.0, 30.0)])
def test_random_latency_of_a_few_first_answers_is_rarely_read_as_a_queue(low, high):
    # 3 answers at 3 levels lined up past 0.8 by chance in ~10% of runs (29 and 42 of 300
    # seeds), and the limit stayed at 1-3 calls for good at a provider that queues nothing.
    # From fewer than QUEUE_FEW_SAMPLES answers a queue must now be a line (0.97).
    readings = sum(_reads_a_queue_at_a_hosted_provider(seed, low, high) for seed in range(100))
    assert readings <= 3, readings
