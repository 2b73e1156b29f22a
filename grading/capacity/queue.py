"""The queue signal: a server that runs fewer calls at once than we send queues the rest,
and each call's latency grows with the calls in flight when it started (a server that runs
one call at a time and takes S per call answers the n-th of n calls sent together after
about n x S). No 429 ever comes, and the delay signal stops at ``DELAY_FLOOR``: measured
against a one-slot local server (~7 s a call), slow start went to 24 calls in flight and
15 of them timed out in the server's queue.

When latency rises with the level in the recent answers (a strong correlation, the
highest at least ``LATENCY_TOLERANCE`` x the lowest and ``QUEUE_MIN_RISE`` above it), the
server's parallelism is what Little's law gives for the answers: the third decile of
``level x S / latency`` (``S``, the lowest latency: a call that did not queue), rounded.
The limit drops to it and stays (no growth, no probes above it: every call above it waits
in the queue, and the wait is what times calls out)."""

from __future__ import annotations

import math
import statistics
from collections import deque

from grading.capacity.constants import LATENCY_TOLERANCE

QUEUE_SAMPLES = 32  # recent answers the signal looks at
QUEUE_MIN_SAMPLES = 3  # ... at least this many, at QUEUE_MIN_LEVELS levels or more
QUEUE_MIN_LEVELS = 3
QUEUE_CORRELATION = 0.8  # of latency with level: the answers queue
# Seconds the slowest answer took beyond the fastest, at least: a shorter queue costs less
# than the parallelism it would give up, and our own event loop, taking in a round's answers
# one after another, makes latency rise with the level by tens of milliseconds too.
QUEUE_MIN_RISE = 0.25
UNQUEUED = 1.05  # x the fastest latency: an answer this quick did not wait in a queue


class QueueSignal:
    """Latency against the level of each answer; mixed into ``CapacityEstimate``."""

    queue_slots: int | None = None  # the server's parallelism, once a queue was seen
    cpu_bound: bool
    cpu_watched = False  # the caller measures our own CPU (``own_cpu``) ...
    cpu_measured = False  # ... and did, once at least
    _queue_samples: deque[tuple[int, float]]

    def _observe_queue(self, level: int, latency: float) -> int | None:
        """Note an answer; the parallelism found, when this answer shows a queue. Not while
        our own process is busy, nor before it was measured once when its caller measures
        it (``own_cpu``): a starved event loop takes in answers one after another, and
        their latency rises with the level as in a server's queue (seen under a load of 13
        on 2 cores, before the first second's measure)."""
        if self.queue_slots is not None or self.cpu_bound:
            return None  # busy: our own queue (and forgotten when free, ``own_cpu``)
        samples = self._queue_samples
        samples.append((level, latency))
        if self.cpu_watched and not self.cpu_measured:
            return None
        slots = queue_parallelism(list(samples))
        if slots is not None:
            self.queue_slots = slots
        return slots


def queue_parallelism(samples: list[tuple[int, float]]) -> int | None:
    """How many calls the server runs at once when ``samples`` (level, latency) show a
    queue; None when they do not."""
    if len(samples) < QUEUE_MIN_SAMPLES or len({lv for lv, _ in samples}) < QUEUE_MIN_LEVELS:
        return None
    fastest = min(latency for _, latency in samples)
    slowest = max(latency for _, latency in samples)
    if fastest <= 0 or slowest < LATENCY_TOLERANCE * fastest or \
            slowest - fastest < QUEUE_MIN_RISE:
        return None
    n = len(samples)
    mean_level = sum(lv for lv, _ in samples) / n
    mean_latency = sum(latency for _, latency in samples) / n
    cov = sum((lv - mean_level) * (latency - mean_latency) for lv, latency in samples)
    var_level = sum((lv - mean_level) ** 2 for lv, _ in samples)
    var_latency = sum((latency - mean_latency) ** 2 for _, latency in samples)
    if cov <= 0 or var_level <= 0 or var_latency <= 0:
        return None
    if cov / math.sqrt(var_level * var_latency) < QUEUE_CORRELATION:
        return None
    # Little's law per answer: the calls served at once while it waited, read low (the
    # third decile): a call that started just as a slot freed says more than there are, and
    # at a one-slot server only the first call does not queue, slowed by the connection's
    # set-up (0.53 s against a 0.3 s service on a loaded machine: its median read 1.8).
    # Erring low leaves a slot idle; erring high queues every call.
    # A call answered in about the fastest time did not queue: at least its level runs at
    # once (a client's own CPU per call, 20 ms on a 0.22 s call, is such a queue past 11).
    ratios = [lv * fastest / latency for lv, latency in samples]
    served = max(lv for lv, latency in samples if latency <= UNQUEUED * fastest)
    slots = max(1, served, round(statistics.quantiles(ratios, n=10)[2]))
    # Clearly queueing: at most half of the most calls sent were being served. Latency that
    # rises a little with many calls (our own event loop taking in answers) is not a queue.
    if slots * 2 > max(lv for lv, _ in samples):
        return None
    return slots
