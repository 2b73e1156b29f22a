"""The delay signal (TCP Vegas, Gradient2): the short-term latency against a baseline, and
our own CPU, which makes latency rise in our own event loop rather than at the provider."""

from __future__ import annotations

import math

from grading.capacity.constants import (
    BASELINE_SAMPLES,
    LATENCY_TOLERANCE,
    LATENCY_WARMUP,
    LONG_SECONDS,
    MIN_LATENCY_RISE,
)


def _ewma(average: float | None, sample: float, samples: float) -> float:
    if average is None:
        return sample
    return average + (sample - average) * 2.0 / (samples + 1.0)


class DelaySignal:
    """Latency and CPU; mixed into ``CapacityEstimate``."""

    def own_cpu(self, busy: bool) -> None:
        """Whether the process is busy for most of a core (measured by the caller)."""
        if self.cpu_bound and not busy:
            self.short_latency, self._fresh = None, 0  # measured in our own queue
            self._queue_samples.clear()  # ... as were these (``queue``)
        if busy:
            self._to_send = 0  # probes not sent yet stay unsent: no growth while busy
        self.cpu_bound = busy
        self.cpu_measured = True

    def _observe_latency(self, latency: float, now: float, *, fresh: bool) -> None:
        self.samples += 1
        if fresh:  # the short-term average is of calls started since the last decrease
            self._fresh += 1
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
        if (self.samples < LATENCY_WARMUP or self._fresh < max(8.0, self.limit / 2)
                or self.short_latency is None
                or self.long_latency is None or math.isinf(self.long_latency)):
            return False
        assert self.long_latency is not None
        return (self.short_latency > LATENCY_TOLERANCE * self.long_latency
                and self.short_latency - self.long_latency > MIN_LATENCY_RISE)
