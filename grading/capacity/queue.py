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
in the queue, and the wait is what times calls out).

Calls started together (no call ended between their starts: slow start's wave and the call
an answer freed, or the calls a first answer let go) race to the server, whose queue is not
their start order: their requests, sent within milliseconds, are taken in by the server's
threads in any order (traced under load at a one-slot server: a level-3 call answered
first read as 3 slots, and the race hid the rise with the level until slow start had 16
calls queued, past the timeout). Their levels are known only together, so the latency may
rise with the level or with the mean level of the wave (both known before the answer, so
latency that varies at random rises with neither); and once it does, the order of the
answers gives each call its place in the queue for the parallelism (an order that would
rise with latency by itself: it is read only after a queue was seen)."""

from __future__ import annotations

import math
import statistics
from collections import deque

from grading.capacity.calls import Call
from grading.capacity.constants import LATENCY_TOLERANCE

QUEUE_SAMPLES = 32  # recent answers the signal looks at
QUEUE_MIN_SAMPLES = 4  # ... at least this many, at QUEUE_MIN_LEVELS levels or more
QUEUE_MIN_LEVELS = 3
QUEUE_CORRELATION = 0.8  # of latency with level: the answers queue
# ... but from fewer than QUEUE_FEW_SAMPLES answers, only this close to a line: 3-7 answers of
# a hosted provider's random latency (1-5 s) lined up with their levels past 0.8 in ~10% of
# runs (with 3 answers allowed), and the limit stayed at 1-3 for good; a real queue's first
# answers are a line (tests/grading/test_capacity_queue.py, both cases).
QUEUE_FEW_SAMPLES = 8
QUEUE_FEW_CORRELATION = 0.97
# Seconds the slowest answer took beyond the fastest, at least: a shorter queue costs less
# than the parallelism it would give up, and our own event loop, taking in a round's answers
# one after another, makes latency rise with the level by tens of milliseconds too.
QUEUE_MIN_RISE = 0.25
UNQUEUED = 1.05  # x the fastest latency: an answer this quick did not wait in a queue
BURSTS_KEPT = 256  # waves of calls whose levels are remembered until their answers


class Bursts:
    """Waves of calls started together: the calls started since the last call ended."""

    def __init__(self) -> None:
        self._open = False
        self._last = 0
        self._waves: dict[int, list[int]] = {}  # wave -> [lowest level, highest, answered]

    def join(self, level: int) -> int:
        """A call starts at ``level``; the wave it belongs to."""
        if self._open:
            self._waves[self._last][1] = level
            return self._last
        self._open, self._last = True, self._last + 1
        self._waves[self._last] = [level, level, 0]
        if len(self._waves) > BURSTS_KEPT:
            del self._waves[next(iter(self._waves))]
        return self._last

    def close(self) -> None:
        """A call ended: the next call that starts opens a wave."""
        self._open = False

    def answered(self, call: Call) -> tuple[float, int]:
        """An answer's level, as far as its wave's race lets it be known (the mean of the
        wave's levels), and its place in the server's queue (the wave's lowest level, plus
        the wave's calls answered before it)."""
        wave = self._waves.get(call.burst)
        if wave is None:
            return float(call.level), call.level
        lowest, highest, before = wave
        wave[2] += 1
        return (lowest + highest) / 2, min(highest, lowest + before)


class QueueSignal:
    """Latency against the level of each answer; mixed into ``CapacityEstimate``."""

    queue_slots: int | None = None  # the server's parallelism, once a queue was seen
    cpu_bound: bool
    cpu_watched = False  # the caller measures our own CPU (``own_cpu``) ...
    cpu_measured = False  # ... and did, once at least
    _queue_samples: deque[tuple[int, float, int, float]]  # level, latency, place, wave's

    def _observe_queue(self, call: Call, latency: float) -> int | None:
        """Note an answer; the parallelism found, when this answer shows a queue. Not while
        our own process is busy, nor before it was measured once when its caller measures
        it (``own_cpu``): a starved event loop takes in answers one after another, and
        their latency rises with the level as in a server's queue (seen under a load of 13
        on 2 cores, before the first second's measure)."""
        together, place = self._bursts.answered(call)
        if self.queue_slots is not None or self.cpu_bound:
            return None  # busy: our own queue (and forgotten when free, ``own_cpu``)
        samples = self._queue_samples
        samples.append((call.level, latency, place, together))
        if self.cpu_watched and not self.cpu_measured:
            return None
        slots = queue_parallelism(list(samples))
        if slots is not None:
            self.queue_slots = slots
        return slots

    def _queued(self, slots: int, now: float) -> None:
        """The server runs ``slots`` calls at once and queues the rest: the limit goes
        there and stays; a process that resumes from it probes above it rarely."""
        self.limit = float(min(slots, self.max_limit))
        self.refused_at = float(slots + 1)
        self._stop_growth(now)
        self.short_latency, self._fresh = None, 0
        self.decreases += 1
        self.lowest_limit = min(self.lowest_limit, self.limit)


def queue_parallelism(samples: list[tuple[float, ...]]) -> int | None:
    """How many calls the server runs at once when ``samples`` show a queue; None when
    they do not. A sample: (level, latency), and for a call started with others (``Bursts``)
    its place in the server's queue and the mean level of its wave."""
    if len(samples) < QUEUE_MIN_SAMPLES or len({s[0] for s in samples}) < QUEUE_MIN_LEVELS:
        return None
    fastest = min(s[1] for s in samples)
    slowest = max(s[1] for s in samples)
    if fastest <= 0 or slowest < LATENCY_TOLERANCE * fastest or \
            slowest - fastest < QUEUE_MIN_RISE:
        return None
    latencies = [s[1] for s in samples]
    # Latency rising with the level, or with the waves' levels when the race within a wave
    # hides it (either is measured before the answer: neither can rise with an answer's
    # order by itself, as its place does).
    needed = QUEUE_CORRELATION if len(samples) >= QUEUE_FEW_SAMPLES else QUEUE_FEW_CORRELATION
    if max(_correlation([s[0] for s in samples], latencies),
           _correlation([s[3] if len(s) > 3 else s[0] for s in samples], latencies)
           ) < needed:
        return None
    # Little's law per answer: the calls served at once while it waited, read low (the
    # third decile): a call that started just as a slot freed says more than there are, and
    # at a one-slot server only the first call does not queue, slowed by the connection's
    # set-up (0.53 s against a 0.3 s service on a loaded machine: its median read 1.8).
    # Erring low leaves a slot idle; erring high queues every call.
    # A call answered in about the fastest time did not queue: at least its place runs at
    # once (a client's own CPU per call, 20 ms on a 0.22 s call, is such a queue past 11).
    places = [(s[2] if len(s) > 2 else s[0], s[1]) for s in samples]
    ratios = [place * fastest / latency for place, latency in places]
    served = max(place for place, latency in places if latency <= UNQUEUED * fastest)
    slots = max(1, int(served), round(statistics.quantiles(ratios, n=10)[2]))
    # Clearly queueing: at most half of the most calls sent were being served. Latency that
    # rises a little with many calls (our own event loop taking in answers) is not a queue.
    if slots * 2 > max(place for place, _ in places):
        return None
    return slots


def _correlation(levels: list[float], latencies: list[float]) -> float:
    n = len(levels)
    mean_level, mean_latency = sum(levels) / n, sum(latencies) / n
    cov = sum((lv - mean_level) * (lt - mean_latency)
              for lv, lt in zip(levels, latencies, strict=True))
    var_level = sum((lv - mean_level) ** 2 for lv in levels)
    var_latency = sum((lt - mean_latency) ** 2 for lt in latencies)
    if cov <= 0 or var_level <= 0 or var_latency <= 0:
        return 0.0
    return cov / math.sqrt(var_level * var_latency)
