"""Capacity discovery with a fake clock: a simulated provider with a concurrency cap (429
beyond it), a latency, optionally a latency that rises with load, drives the estimate."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from grading.capacity import INITIAL_LIMIT, MAX_PAUSE, CapacityEstimate


@dataclass
class Simulation:
    """Calls kept in flight up to the estimate's slots, against a provider with ``cap``."""

    estimate: CapacityEstimate
    cap: Callable[[float], int | None]
    latency: Callable[[float, int], float]
    retry_after: float | None = None
    refusal_latency: float = 0.002
    now: float = 0.0
    in_flight: int = 0
    calls: int = 0
    refused: int = 0
    successes: int = 0
    timeline: list[tuple[float, float]] = field(default_factory=list)
    _events: list[tuple[float, int, float, bool]] = field(default_factory=list)
    _seq: int = 0

    def _start(self) -> None:
        self.in_flight += 1
        self.calls += 1
        cap = self.cap(self.now)
        refused = cap is not None and self.in_flight > cap
        self._seq += 1
        jitter = 1.0 + 0.2 * ((self._seq * 7919) % 101) / 100  # calls do not end in lockstep
        delay = (self.refusal_latency if refused
                 else self.latency(self.now, self.in_flight) * jitter)
        heapq.heappush(self._events, (self.now + delay, self._seq, self.now, refused))

    def _fill(self) -> None:
        while self.in_flight < self.estimate.slots and self.now >= self.estimate.paused_until:
            self._start()

    def run(self, until: float) -> Simulation:
        while self.now < until:
            self._fill()
            next_time = self._events[0][0] if self._events else until
            if self.estimate.paused_until > self.now:
                next_time = min(next_time, self.estimate.paused_until)
            self.now = max(self.now, next_time)
            while self._events and self._events[0][0] <= self.now:
                _at, _seq, started, refused = heapq.heappop(self._events)
                if refused:
                    self.refused += 1
                    self.estimate.on_refusal(started, self.now, self.retry_after)
                else:
                    self.successes += 1
                    self.estimate.on_success(started, self.now, self.in_flight)
                self.in_flight -= 1
                self._fill()  # the freed slot is taken at once, as a saturated client does
            self.timeline.append((self.now, self.estimate.limit))
        return self

    def limit_at(self, when: float) -> float:
        return [limit for at, limit in self.timeline if at <= when][-1]

    def average_limit(self, start: float, end: float) -> float:
        values = [limit for at, limit in self.timeline if start <= at <= end]
        return sum(values) / len(values)


def flat(latency: float) -> Callable[[float, int], float]:
    return lambda _now, _in_flight: latency


def cap_of(value: int | None) -> Callable[[float], int | None]:
    return lambda _now: value


def test_starts_low_and_ramps_up_exponentially_while_calls_succeed():
    estimate = CapacityEstimate()
    assert estimate.slots == INITIAL_LIMIT
    sim = Simulation(estimate, cap_of(None), flat(0.2)).run(until=1.3)
    # Slow start doubles the limit each ~220 ms round: 4, 8, 16, 32, 64 -> 128 after 5 rounds.
    assert sim.limit_at(1.3) >= 100
    assert sim.refused == 0


@pytest.mark.parametrize("cap", [pytest.param(8, id="cap-8"), pytest.param(32, id="cap-32"),
                                 pytest.param(128, id="cap-128")])
def test_settles_at_the_providers_cap_with_rare_refusals(cap):
    sim = Simulation(CapacityEstimate(), cap_of(cap), flat(0.2)).run(until=60.0)
    # Near the cap for the whole second half, never far above it.
    assert cap * 0.9 <= sim.average_limit(30.0, 60.0) <= cap + 1
    assert max(limit for at, limit in sim.timeline if at > 10) < cap + 2
    # 429s stay rare: one slow probe every few dozen rounds once the cap is known.
    assert sim.refused / sim.calls <= 0.02, (sim.refused, sim.calls)
    # Throughput within 10% of a client that knew the cap from the start (mean latency 0.22).
    assert sim.successes >= 0.9 * cap * 60.0 / 0.22


def test_a_429_backs_off_once_per_round_not_once_per_refused_call():
    estimate = CapacityEstimate()
    estimate.limit, estimate.slow_start = 40.0, False
    for _ in range(10):  # ten 429s from calls of the same round, all started at t=0
        estimate.on_refusal(started=0.0, now=0.5)
    assert estimate.limit == pytest.approx(36.0)
    assert estimate.decreases == 1 and estimate.refusals == 10
    estimate.on_refusal(started=0.6, now=0.8)  # a call started after the decrease: new round
    assert estimate.limit == pytest.approx(32.4)


def test_retry_after_pauses_new_calls_and_is_capped():
    estimate = CapacityEstimate()
    estimate.on_refusal(started=0.0, now=1.0, retry_after=5.0)
    assert estimate.paused_until == pytest.approx(6.0)
    # A provider saying "come back in an hour" is capped.
    estimate.on_refusal(started=2.0, now=2.0, retry_after=3600.0)
    assert estimate.paused_until == pytest.approx(2.0 + MAX_PAUSE)


def test_retry_after_is_honoured_by_the_simulated_client():
    refusals_until = 1.0
    sim = Simulation(CapacityEstimate(), lambda now: 0 if now < refusals_until else None,
                     flat(0.05), retry_after=2.0).run(until=6.0)
    # Every call of the first burst was refused; then nothing was sent for 2 s.
    first_after = [at for at, _limit in sim.timeline if at > 0.01]
    assert sim.refused <= INITIAL_LIMIT
    assert first_after and sim.estimate.paused_until >= 2.0
    assert sim.successes > 0


def test_rising_latency_backs_off_before_any_429():
    # A server that queues beyond 20 in flight: latency grows with the queue, never a 429.
    def queueing(_now: float, in_flight: int) -> float:
        return 0.1 * max(1.0, in_flight / 20)

    sim = Simulation(CapacityEstimate(), cap_of(None), queueing).run(until=60.0)
    assert sim.refused == 0
    assert sim.estimate.decreases >= 1
    # It holds the limit near the knee instead of queueing hundreds of calls.
    assert sim.average_limit(30.0, 60.0) <= 45, sim.average_limit(30.0, 60.0)
    assert sim.average_limit(30.0, 60.0) >= 15


def test_adapts_when_the_capacity_changes_mid_run():
    def cap(now: float) -> int:
        return 32 if now < 30 else (8 if now < 60 else 64)

    sim = Simulation(CapacityEstimate(), cap, flat(0.2)).run(until=100.0)
    assert 28 <= sim.average_limit(20.0, 30.0) <= 33
    assert 7 <= sim.average_limit(40.0, 60.0) <= 9  # the provider cut capacity: down fast
    assert sim.average_limit(85.0, 100.0) >= 0.9 * 64  # it raised it: found again
    assert sim.refused / sim.calls <= 0.03


def test_a_user_ceiling_caps_the_discovery():
    sim = Simulation(CapacityEstimate(ceiling=10), cap_of(None), flat(0.1)).run(until=10.0)
    assert max(limit for _at, limit in sim.timeline) <= 10
    assert sim.limit_at(10.0) == 10


def test_an_idle_limit_does_not_grow():
    estimate = CapacityEstimate()
    estimate.slow_start = False
    for i in range(200):  # one call at a time, limit 4: it is not what holds calls back
        estimate.on_success(started=i * 0.1, now=i * 0.1 + 0.05, in_flight=1)
    assert estimate.limit == INITIAL_LIMIT


def test_a_peer_refusal_backs_off_once_per_round():
    estimate = CapacityEstimate()
    estimate.limit, estimate.slow_start = 20.0, False
    estimate.on_peer_refusal(now=10.0, round_time=0.2)
    estimate.on_peer_refusal(now=10.1, round_time=0.2)  # same round
    assert estimate.limit == pytest.approx(18.0) and estimate.decreases == 1


def test_seeding_skips_slow_start_only_before_any_call():
    estimate = CapacityEstimate(ceiling=50)
    estimate.seed(80.0)
    assert estimate.limit == 50 and not estimate.slow_start
    used = CapacityEstimate()
    used.on_success(0.0, 0.1, in_flight=4)
    used.seed(80.0)
    assert used.limit < 80
