"""What the capacity rules are told (a call) and show (a snapshot)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Call:
    """One call in flight: when it started, at which level, and whether it is the probe."""

    started: float
    level: int
    wave: int = 0  # the wave of probes it belongs to; 0: not a probe
    opening: bool = False  # one of the opening round's calls, all sent before any answer

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
