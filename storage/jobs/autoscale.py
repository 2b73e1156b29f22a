"""Helper processes started when one grading process is the bound (``grade --workers auto``).

litellm spends a few milliseconds of CPU on every call. When the provider takes more calls
at once than that leaves room for in one core (a fast provider, a high rate limit), the
grading process, not the provider, sets the pace, and its Python runs flat out on one core.
This scaler watches for exactly that and adds the processes ``--workers N`` would have
started, one at a time, while all of these hold:

- the process used at least ``BUSY_SHARE`` of a core in each of the last ``SUSTAINED``
  samples, taken every ``INTERVAL`` seconds (a process waiting on the provider uses far
  less);
- the machine had at least ``IDLE_CORES`` of a core idle in the last sample (from
  ``/proc/stat`` where there is one; elsewhere, every core but the one this process uses
  counts as idle);
- the provider is not the bound: not every endpoint's limit sits at the level its provider
  refused above, and it is not still unknown (``provider``: "at cap", or "learning" while
  no endpoint has answered anything yet, in the last ``SUSTAINED`` samples: a process busy
  starting up is not busy grading). There a second process would only split the same calls in
  flight between two processes, each probing above its share into the one cap, a probe of
  one refusing the other's calls. Measured (``benchmarks/grading_throughput.py``, cap 32):
  ``--workers 2`` took 1.22x the time of a bare client with 4-5.5% of calls refused, one
  process 0.94-1.09x. Below a cap our own CPU holds the limit back (it does not grow while
  the process is busy): there, a helper is what lets the calls in flight grow;
- the provider refused no more than one call (HTTP 429) per sample in the last
  ``QUIET_SAMPLES``: a storm of refusals (the opening slow start overshooting) says the limit
  is still being learned. A single refusal is a probe above a level already found, which
  goes on as long as the run: a helper taking over half of the limit (below) adds no call
  in flight, so waiting for probes to stop would only keep a core idle;
- at least ``MIN_OPEN_CHUNKS`` chunks of the runs are still unclaimed, so a helper finds
  work once it has started (starting one costs seconds of CPU: it imports litellm);
- fewer than ``max_helpers`` helpers run (cores - 1) and the last one started at least
  ``GAP`` seconds ago, so each has time to show its effect before the next is weighed.

Starting a helper costs seconds (it imports litellm), and on a CPU-bound machine those
seconds are slow ones. So while there is enough work (``SPARE_CHUNKS`` unclaimed chunks) one
helper waits on standby, imported and idle: it takes no chunk, and makes no call, until
the scaler says go, so a provider that is the bound (a low rate limit) never sees a second
process probing it. A standby helper not needed is stopped when the runs end.

Helpers join the runs by claiming chunks (``storage.jobs.chunks``). A helper set to work
starts with half of this process's limit on each endpoint, handed over with "go" (this
process keeps the other half; ``CapacityEstimate.give_share``): the provider sees as many
calls in flight as before, from two processes, so a provider found at its cap gets no
new probe into it, and the CPU work of those calls is split over two cores. Afterwards the
processes share what they learn through the database (``storage.jobs.limiter.
CapacitySharing``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

log = logging.getLogger(__name__)

# "below cap"; "at cap": every endpoint in use sits at its provider's refused level;
# "learning": no endpoint has answered anything yet (``AutoScaler``'s ``provider``)
ProviderState = Literal["below cap", "at cap", "learning"]

BUSY_SHARE = 0.8
SUSTAINED = 2
IDLE_CORES = 0.4
MIN_OPEN_CHUNKS = 2
SPARE_CHUNKS = 4
GAP = 5.0
QUIET_SAMPLES = 2
STORM_REFUSALS = 2  # refusals in one sample that say the limit is still being learned
INTERVAL = 0.5
MAX_HELPERS: int | None = None  # None: one per core but this process's


def helper_limit(cores: int | None = None) -> int:
    """At most this many helpers: ``MAX_HELPERS``, or one per core but this process's."""
    if MAX_HELPERS is not None:
        return MAX_HELPERS
    return (cores or os.cpu_count() or 1) - 1


@dataclass(frozen=True)
class Sample:
    own_share: float  # of one core, this process, the last interval
    idle_cores: float  # of the whole machine, the last interval
    refused: bool = False  # the provider refused calls of ours in a storm, the last interval
    provider: ProviderState = "below cap"  # the provider is the bound, or not known yet


def wants_helper(recent: list[Sample], *, open_chunks: int, helpers: int, max_helpers: int,
                 since_last: float) -> bool:
    """The decision, from the last samples (oldest first) and the state of the runs."""
    if helpers >= max_helpers or since_last < GAP or open_chunks < MIN_OPEN_CHUNKS:
        return False
    if len(recent) < SUSTAINED:
        return False
    if QUIET_SAMPLES and any(s.refused for s in recent[-QUIET_SAMPLES:]):
        return False
    last = recent[-SUSTAINED:]
    if last[-1].provider == "at cap" or any(s.provider == "learning" for s in last):
        return False  # the provider is the bound (or may be), not this process
    # Idle now is what counts: a standby helper importing litellm keeps a core busy for a
    # few seconds, and it is exactly the process that would use the idle core.
    return all(s.own_share >= BUSY_SHARE for s in last) and last[-1].idle_cores >= IDLE_CORES


class MachineMeter:
    """CPU use over the last interval: this process's share of one core, and the idle cores
    of the machine."""

    def __init__(self, cores: int | None = None):
        self.cores = cores or os.cpu_count() or 1
        self._wall = time.monotonic()
        self._own = time.process_time()
        self._stat = _read_proc_stat()

    def sample(self) -> Sample:
        wall, own, stat = time.monotonic(), time.process_time(), _read_proc_stat()
        elapsed = max(wall - self._wall, 1e-6)
        share = (own - self._own) / elapsed
        if stat is not None and self._stat is not None and stat[1] > self._stat[1]:
            idle_fraction = (stat[0] - self._stat[0]) / (stat[1] - self._stat[1])
            idle = idle_fraction * self.cores
        else:  # no /proc/stat: assume the other cores are free
            idle = max(0.0, self.cores - share)
        self._wall, self._own, self._stat = wall, own, stat
        return Sample(own_share=share, idle_cores=idle)


def _read_proc_stat() -> tuple[int, int] | None:
    """(idle ticks, total ticks) of all cores since boot; None where there is no /proc."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(value) for value in fields[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    return idle, sum(ticks[:8])  # guest time is already counted in user


class AutoScaler:
    """Samples once a second and puts a helper to work when ``wants_helper`` says so.

    ``spawn()`` starts one helper process on standby and returns it; ``activate(helper,
    handed)`` sets it to work with what ``handover()`` (awaited first) gave up for it
    (``give_back(handed)`` when no helper could be set to work after all);
    ``dismiss(helper)`` stops one that was never needed. ``provider()``: "at cap" when
    every endpoint in use sits at its provider's refused level, "learning" while none has
    answered anything yet, else "below cap". ``open_chunks()`` counts the
    unclaimed chunks of the runs (called in a thread: it reads the database).
    """

    def __init__(self, spawn: Callable[[], object], activate: Callable[[object, Any], bool],
                 dismiss: Callable[[object], None], open_chunks: Callable[[], int], *,
                 refusals: Callable[[], int] = lambda: 0,
                 provider: Callable[[], ProviderState] = lambda: "below cap",
                 handover: Callable[[], Awaitable[Any]] | None = None,
                 give_back: Callable[[Any], None] = lambda _handed: None,
                 max_helpers: int | None = None, meter: MachineMeter | None = None):
        self.meter = meter or MachineMeter()
        if max_helpers is None:
            max_helpers = helper_limit(self.meter.cores)
        self.max_helpers = max(0, max_helpers)
        self.spawn = spawn
        self.activate = activate
        self.dismiss = dismiss
        self.open_chunks = open_chunks
        self.refusals = refusals  # 429s of this process's calls so far
        self.provider = provider  # "below cap", "at cap" or "learning" (``Sample``)
        self.handover = handover
        self.give_back = give_back
        self._refused_before = 0
        self.helpers: list = []  # at work
        self.spare = None  # on standby
        self._recent: deque[Sample] = deque(maxlen=max(SUSTAINED, QUIET_SAMPLES))
        self._last_start = -GAP

    async def run(self) -> None:
        """Until cancelled (when the runs end); then ``close()``."""
        if self.max_helpers == 0:
            return
        while True:
            await self._keep_spare()
            await asyncio.sleep(INTERVAL)
            self._recent.append(self.sample())
            await self.consider()

    def sample(self) -> Sample:
        """The machine's last interval, and whether the provider refused a storm of calls."""
        refused_now = self.refusals()
        sample = self.meter.sample()
        storm = refused_now - self._refused_before >= STORM_REFUSALS
        self._refused_before = refused_now
        return Sample(sample.own_share, sample.idle_cores, refused=storm,
                      provider=self.provider())

    def prestart(self, chunks: int, started=None) -> None:
        """Have the standby helper now, before grading starts, when the work will be
        ``chunks`` chunks or more: its import overlaps this process's own start. ``started``:
        one already importing (started before the runs existed); kept if wanted, else
        dismissed."""
        if self.max_helpers and self.spare is None and chunks >= SPARE_CHUNKS:
            self.spare = started if started is not None else self.spawn()
        elif started is not None:
            self.dismiss(started)

    def close(self) -> None:
        """Stop the standby helper, if any (helpers at work end with their runs)."""
        spare, self.spare = self.spare, None
        if spare is not None:
            self.dismiss(spare)

    async def _count_open(self) -> int | None:
        try:
            return await asyncio.to_thread(self.open_chunks)
        except Exception as exc:  # an optimisation: the runs go on without a helper
            log.warning("could not count the chunks left to grade: %s", exc)
            return None

    async def _keep_spare(self) -> None:
        if self.spare is not None or len(self.helpers) >= self.max_helpers:
            return
        open_chunks = await self._count_open()
        if open_chunks is not None and open_chunks >= SPARE_CHUNKS:
            self.spare = self.spawn()

    async def consider(self) -> bool:
        recent = list(self._recent)
        since = time.monotonic() - self._last_start
        # Cheap checks first: the database is asked only when the CPU says "busy".
        if not wants_helper(recent, open_chunks=MIN_OPEN_CHUNKS, helpers=len(self.helpers),
                            max_helpers=self.max_helpers, since_last=since):
            return False
        open_chunks = await self._count_open()
        if open_chunks is None or not wants_helper(
                recent, open_chunks=open_chunks, helpers=len(self.helpers),
                max_helpers=self.max_helpers, since_last=since):
            return False
        spare, self.spare = self.spare, None
        handed = await self.handover() if self.handover is not None else None
        if spare is None or not self.activate(spare, handed):  # none ready (or it died)
            spare = self.spawn()
            if not self.activate(spare, handed):
                self.dismiss(spare)
                self.give_back(handed)
                return False
        self._last_start = time.monotonic()
        # The next helper is weighed on what this one changes (refusals are kept).
        kept = [Sample(0.0, 0.0, refused=True)] if any(r.refused for r in recent) else []
        self._recent.clear()
        self._recent.extend(kept)
        self.helpers.append(spare)
        log.info("grading is CPU-bound (%.0f%% of a core, %.1f cores idle, %s chunks left): "
                 "helper %s of at most %s at work", 100 * recent[-1].own_share,
                 recent[-1].idle_cores, open_chunks, len(self.helpers), self.max_helpers)
        return True
