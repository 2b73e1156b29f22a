"""Capacity discovery: how many calls to keep in flight to one provider endpoint.

No I/O and no asyncio: a state machine fed with call outcomes and a clock, so every rule is
table-tested with a fake clock. It is TCP congestion control applied to concurrent calls:

- **Slow start** (RFC 5681): from ``INITIAL_LIMIT``, +1 per success, so the limit doubles
  every round of calls, until the first sign of congestion.
- **Multiplicative decrease** on a refusal (HTTP 429, here or reported by a peer process):
  x0.9 (and at least -1), once per round — calls that started before the last decrease saw
  the old limit, so their 429s belong to the same round. Retry-After pauses new calls
  (capped at ``MAX_PAUSE``).
- **Additive increase with a remembered ceiling**, CUBIC's idea (RFC 9438 ``W_max``): the
  level of the last refusal is kept. Below it the limit climbs back quickly (+1, +2, +4, ...
  per round); the step onto that level is a slow probe, one step per ``probe_rounds`` rounds,
  doubling (up to ``MAX_PROBE_ROUNDS``) each time the provider refuses at the same level. A
  hard provider cap therefore sees one refusal every few dozen rounds, not every round. A
  probe that passes the old level by 2 means the capacity grew: the memory is dropped and
  the limit ramps up again.
- **Delay signal**, as in TCP Vegas and Netflix concurrency-limits' Gradient2: when the
  short-term average latency exceeds ``LATENCY_TOLERANCE`` x the baseline (the lowest recent
  average), the provider (or our own event loop) is queueing calls: the limit shrinks by
  baseline / current (at most by half), back to where calls did not queue; no pause.
- The limit only grows while it is used (at least half of it in flight), is capped by a user's
  ceiling when there is one, and by ``MAX_LIMIT`` otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

INITIAL_LIMIT = 4
MAX_LIMIT = 1024
MAX_PAUSE = 60.0
DECREASE = 0.9
MAX_PROBE_ROUNDS = 16
LATENCY_TOLERANCE = 2.0
MIN_LATENCY_RISE = 0.005  # seconds: below this, latency "rising" is noise
LATENCY_WARMUP = 20  # samples before the delay signal is trusted
BASELINE_SAMPLES = 40
LONG_SECONDS = 30.0  # the latency baseline is the lowest average of about this long


@dataclass(frozen=True)
class CapacitySnapshot:
    limit: float
    ceiling: int | None
    slow_start: bool
    refused_at: float | None
    probe_rounds: int
    short_latency: float | None
    long_latency: float | None
    paused_until: float
    decreases: int
    refusals: int
    lowest_limit: float


def _ewma(average: float | None, sample: float, samples: float) -> float:
    if average is None:
        return sample
    return average + (sample - average) * 2.0 / (samples + 1.0)


class CapacityEstimate:
    """The discovered concurrency of one endpoint; ``now`` is any monotonic clock's reading."""

    def __init__(self, ceiling: int | None = None, *, initial: int = INITIAL_LIMIT):
        self.ceiling = ceiling
        self.limit = float(min(initial, self.max_limit))
        self.slow_start = True
        self.refused_at: float | None = None
        self.probe_rounds = 1
        self.step = 1.0  # rounds climb by this below the remembered level; doubles per round
        self._round_successes = 0.0
        self.last_decrease = -math.inf
        self.paused_until = -math.inf
        self.short_latency: float | None = None
        self.long_latency: float | None = None
        self.samples = 0
        self._bucket_started = 0.0
        self._smooth_latency: float | None = None
        self._bucket_min = math.inf
        self._previous_min = math.inf
        self.decreases = 0
        self.refusals = 0
        self.lowest_limit = self.limit

    # -- reading ---------------------------------------------------------------------------
    @property
    def max_limit(self) -> int:
        return MAX_LIMIT if self.ceiling is None else min(MAX_LIMIT, self.ceiling)

    @property
    def slots(self) -> int:
        """Calls allowed in flight now (the limit, rounded down, at least 1)."""
        return max(1, int(self.limit + 1e-9))

    def snapshot(self) -> CapacitySnapshot:
        return CapacitySnapshot(
            limit=self.limit, ceiling=self.ceiling, slow_start=self.slow_start,
            refused_at=self.refused_at, probe_rounds=self.probe_rounds,
            short_latency=self.short_latency, long_latency=self.long_latency,
            paused_until=self.paused_until, decreases=self.decreases, refusals=self.refusals,
            lowest_limit=self.lowest_limit,
        )

    # -- configuration ---------------------------------------------------------------------
    def set_ceiling(self, ceiling: int | None) -> None:
        if ceiling is not None and ceiling < 1:
            raise ValueError(f"concurrency must be >= 1, got {ceiling}")
        self.ceiling = ceiling
        self.limit = min(self.limit, float(self.max_limit))

    def seed(self, limit: float) -> None:
        """Start from what another process learned, instead of slow-starting from scratch."""
        if self.samples == 0 and limit > self.limit:
            self.limit = min(float(self.max_limit), limit)
            self.slow_start = False

    # -- events ----------------------------------------------------------------------------
    def on_success(self, started: float, now: float, in_flight: int) -> None:
        """A call that started at ``started`` succeeded; ``in_flight`` counts it."""
        self._observe_latency(now - started, now)
        if self._congested():
            # Vegas/Gradient2: shrink in proportion, back to where latency was the baseline.
            # Not below the starting limit: so few calls hardly queue anywhere, and on a busy
            # machine our own latency is noisy.
            assert self.short_latency and self.long_latency
            if self.limit > INITIAL_LIMIT:
                factor = max(0.5, self.long_latency / self.short_latency,
                             INITIAL_LIMIT / self.limit)
                self._decrease(started, now, factor=factor)
            return
        if in_flight * 2 < self.limit:  # the limit is not what holds calls back
            return
        if self.slow_start:
            self._grow(1.0)
            return
        if self.refused_at is not None and self.limit + 1.0 > self.refused_at:
            # The slow probe onto the level where the provider refused last time.
            self._grow(1.0 / (self.limit * self.probe_rounds))
            if self.limit >= self.refused_at + 2.0:  # capacity grew: ramp up again
                self.refused_at, self.probe_rounds, self.step = None, 1, 1.0
            return
        increment = self.step / self.limit
        if self.refused_at is not None:
            increment = min(increment, max(0.0, self.refused_at - 1.0 - self.limit))
            if increment == 0.0:
                increment = 1.0 / (self.limit * self.probe_rounds)
        self._grow(increment)
        self._round_successes += 1
        if self._round_successes >= self.limit:
            self._round_successes = 0
            self.step = min(self.step * 2.0, max(1.0, self.limit / 4.0))

    def on_refusal(self, started: float, now: float, retry_after: float | None = None) -> None:
        """The provider answered 429 to a call that started at ``started``."""
        self.refusals += 1
        if retry_after:
            self.paused_until = max(self.paused_until, now + min(retry_after, MAX_PAUSE))
        self._decrease(started, now)

    def on_peer_refusal(self, now: float, round_time: float) -> None:
        """Another process on this endpoint was refused (learned through the database)."""
        self._decrease(now - round_time, now)

    def pause_until(self, until: float) -> None:
        self.paused_until = max(self.paused_until, until)

    # -- internals -------------------------------------------------------------------------
    def _grow(self, increment: float) -> None:
        self.limit = min(float(self.max_limit), self.limit + increment)

    def _decrease(self, started: float, now: float, factor: float = DECREASE) -> None:
        if started <= self.last_decrease:
            return  # this round already paid
        level = self.limit
        same_level = self.refused_at is not None and abs(level - self.refused_at) <= max(
            2.0, 0.1 * level)
        self.probe_rounds = min(MAX_PROBE_ROUNDS, self.probe_rounds * 2) if same_level else 1
        self.refused_at = level
        self.limit = max(1.0, min(level - 1.0, level * factor))
        self.slow_start = False
        self.step = 1.0
        self._round_successes = 0
        self.last_decrease = now
        self.decreases += 1
        self.lowest_limit = min(self.lowest_limit, self.limit)

    def _observe_latency(self, latency: float, now: float) -> None:
        self.samples += 1
        self.short_latency = _ewma(self.short_latency, latency, max(8.0, self.limit))
        self._smooth_latency = _ewma(self._smooth_latency, latency, BASELINE_SAMPLES)
        # The baseline is the lowest smoothed latency of the last LONG_SECONDS or so (two
        # half-window buckets): it follows a model that got slower for good, and cannot
        # creep upwards with a queue we keep building ourselves. Smoothed over more calls
        # than the short-term average, so that noise does not pull it down.
        if now - self._bucket_started >= LONG_SECONDS / 2:
            self._previous_min, self._bucket_min = self._bucket_min, math.inf
            self._bucket_started = now
        if self.samples >= BASELINE_SAMPLES / 2:
            self._bucket_min = min(self._bucket_min, self._smooth_latency)
        self.long_latency = min(self._bucket_min, self._previous_min)

    def _congested(self) -> bool:
        if (self.samples < LATENCY_WARMUP or self.short_latency is None
                or self.long_latency is None or math.isinf(self.long_latency)):
            return False
        assert self.long_latency is not None
        return (self.short_latency > LATENCY_TOLERANCE * self.long_latency
                and self.short_latency - self.long_latency > MIN_LATENCY_RISE)
