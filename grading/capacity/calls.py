"""What the capacity rules are told (a call) and show (a snapshot)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Call:
    """One call in flight: when it started, at which level, and whether it is the probe."""

    started: float
    level: int
    wave: int = 0  # the wave of probes it belongs to; 0: not a probe
    opening: bool = False  # one of the opening round's calls, all sent before any answer
    seq: int | None = None  # the start order (``Overtaking``); None: not numbered
    burst: int = 0  # the calls started since the last call ended (``QueueSignal``); 0: none

    @property
    def probe(self) -> bool:
        return self.wave > 0


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
    refused_rounds: int
    lowest_limit: float
    cpu_bound: bool = False
    answered: int = 0  # calls answered so far
    grew_past: float | None = None  # a refused level answered probes climbed past, since
    own_ceiling: int | None = None  # this process's part of the ceiling (``part``)
    opening_limit: float | None = None  # the opening round's limit (None: no call ended yet)
    opened: bool = False  # every call of the opening round has ended
    probing: bool = False  # a wave of probes (calls above the limit) is out or being sent
    queue_slots: int | None = None  # the server queues calls beyond this many (``queue``)


class Overtaking:
    """Answers that overtook a call. Calls started together race to the server, whose queue
    is not our start order: when a call times out, the calls started after it and answered
    while it waited were served ahead of it, and its place in the server's queue was that much
    further back than its level says (traced: the first of three calls to a one-slot server
    timed out behind the second, and "a call alone" taught nothing)."""

    def __init__(self, keep: int = 1024) -> None:
        self._answers: deque[tuple[float, int]] = deque(maxlen=keep)  # (when, seq), in time order
        self._last = 0

    def number(self) -> int:
        self._last += 1
        return self._last

    def answered(self, call: Call, now: float) -> None:
        if call.seq is not None:
            self._answers.append((now, call.seq))

    def ahead_of(self, call: Call) -> int:
        if call.seq is None:
            return 0
        ahead = 0
        for when, seq in reversed(self._answers):
            if when < call.started:
                break
            ahead += seq > call.seq
        return ahead
