"""Handing a share of this process's limit on each endpoint to the helpers it sets to work
(``storage.jobs.helper_processes``): when (``set_to_work_after_opening``, ``at_cap``) and
how much (``hand_over``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import time
from collections.abc import Sequence

from storage.jobs.helper_standby import activate

log = logging.getLogger(__name__)

HANDOVER_SECONDS = 30.0  # at most this long for our calls to drain to what we kept
OPENING_SECONDS = 30.0  # --workers N: at most this long for the opening's answers
BUSY_WINDOW = 0.2  # ... or until the process was busy (autoscale.BUSY_SHARE) this long
OPENING_GROWTH = 4.0  # ... or until the limit grew this many times the opening's, unrefused
AT_CAP_SHARE = 0.85  # a limit this close to the refused level is at the provider's cap


async def hand_over(endpoints, ways: int) -> list[list]:
    """Split this process's limit on each endpoint ``ways`` ways (``CapacityEstimate.split``):
    one list of shares (``[model, api_base, share, known, part]`` per endpoint) for each of
    the ``ways - 1`` helpers set to work. Returned once this process's own calls are within
    what it kept (at most ``HANDOVER_SECONDS``), so the provider never sees the processes'
    calls on top of each other."""
    from storage.jobs.limiter import limiter_for

    limiters = {(model, api_base): limiter_for(model, api_base)
                for model, api_base in sorted(endpoints, key=str)}
    splits = [(model, api_base, limiter.update(lambda e, _now: e.split(ways)))
              for (model, api_base), limiter in limiters.items()]
    deadline = time.monotonic() + HANDOVER_SECONDS
    while time.monotonic() < deadline and any(
            limiter.stats().in_flight > limiter.limit for limiter in limiters.values()):
        await asyncio.sleep(0.05)
    return [[[model, api_base, *shares[helper]] for model, api_base, shares in splits]
            for helper in range(ways - 1)]


async def set_to_work_after_opening(sessions, run_ids: Sequence[int],
                                    helpers: Sequence[subprocess.Popen]) -> None:
    """``grade --workers N``: tell the helpers to go once this process's opening round on
    every endpoint in use has taught what it can (``_learned``, or the process is busy),
    each with an equal share of its limit (``hand_over``). Measured before
    (``benchmarks/grading_throughput.py``, a provider taking 8 calls, 200 ms): both processes
    opened at once, each at its part of the opening, and each counted only its own calls
    in flight, so each read the other's calls taking the
    provider's slots as refusals at levels 1 or 2 of its own: both held 1-3 calls for the
    first 8 seconds, and the run took 1.13-1.30x the time of one client. One process's
    opening learns the provider's cap; its shares start at it. ``OPENING_SECONDS`` at most
    (then the shares are what this process holds); at once when no chunk is left unclaimed
    to wait for (the runs answered from the cache)."""
    from grading.limiter import share_ceilings
    from storage.jobs import chunks
    from storage.jobs.autoscale import BUSY_SHARE, MachineMeter
    from storage.jobs.limiter import limiter_for
    from storage.services import runs

    try:
        infos = [await asyncio.to_thread(runs.get_run, sessions, run_id) for run_id in run_ids]
        endpoints = {(run.model, run.settings.api_base) for run in infos}
    except Exception as exc:  # the database is away: go at once, each on its own part
        log.warning("helpers set to work without a share of the limit: %s", exc)
        endpoints = set()
    deadline = time.monotonic() + OPENING_SECONDS
    looked = sampled = time.monotonic()
    meter, busy = MachineMeter(), False
    while endpoints and time.monotonic() < deadline:
        if time.monotonic() - sampled >= BUSY_WINDOW:
            # Sooner than the limiter's own measure (a second): with the limiter's, the
            # helpers of a CPU-bound --workers 2 went late (A/B, 1,600 calls at 5 ms, no cap:
            # 4.6 and 5.9 s against 4.2 and 4.2 s told to go at once).
            busy, sampled = meter.sample().own_share >= BUSY_SHARE, time.monotonic()
        limiters = [limiter_for(model, api_base) for model, api_base in endpoints]
        if busy:  # no new wave of slow start (the limiter's own measure takes a second)
            for limiter in limiters:
                limiter.update(lambda e, _now: e.own_cpu(True) if e.slow_start else None)
        learned = [_learned(limiter.snapshot(), busy) for limiter in limiters]
        in_use = [done or limiter.stats().in_flight > 0
                  for done, limiter in zip(learned, limiters, strict=True)]
        if any(learned) and learned == in_use:  # every endpoint in use is learned enough
            break
        if time.monotonic() - looked >= 1.0:
            looked = time.monotonic()
            with contextlib.suppress(Exception):  # the database may be back next time
                if not await asyncio.to_thread(chunks.open_chunks, sessions, run_ids):
                    break
        await asyncio.sleep(0.01)
    ways = len(helpers) + 1
    shares = await hand_over(endpoints, ways)
    share_ceilings(1 / ways)  # and every endpoint this process meets later
    for helper, handed in zip(helpers, shares, strict=True):
        activate(helper, handed, run_ids)


def _learned(snapshot, busy: bool) -> bool:
    """The opening round has ended and what it taught can be split: the provider's cap was
    found (slow start ended), or the limit reached this process's ceiling, or grew to
    ``OPENING_GROWTH`` times the opening's limit with no refusal (the cap, if any, is far
    above: split in slow start, each share goes on doubling), or the process is ``busy``
    for most of a core (a helper is what lets the calls grow); never while a wave of slow
    start is out (its answers, a round later, say whether the cap was found: traced at a
    cap of 32, busy split the owner at 32 with 16 probes out, they were refused after, and
    both shares went on slow-starting from 16). Split before the cap was found,
    each process counted the other's calls taking the provider's slots as refusals at low
    levels of its own (traced at a cap of 32: the owner split at 24 in slow start, both
    overshot, and the helper held 4-5 calls for 7 seconds)."""
    if not snapshot.opened or (snapshot.slow_start and snapshot.probing):
        return False  # a wave of slow start is out: its answers say whether the cap is found
    opening = snapshot.opening_limit or 1.0
    ceiling = snapshot.own_ceiling
    return (not snapshot.slow_start or busy
            or (ceiling is not None and snapshot.limit >= ceiling)
            or snapshot.limit >= OPENING_GROWTH * opening)


def at_cap(snapshot) -> bool:
    """The limit sits at the level the provider refused above (within the 10% a refusal
    takes off), or climbs past it (the capacity grew) to find the next cap, or it has
    reached this process's part of the user's own cap (``--concurrency``: at most that many
    calls in flight, which a second process would not add to)."""
    if (snapshot.own_ceiling is not None
            and snapshot.limit >= AT_CAP_SHARE * snapshot.own_ceiling):
        return True
    level = snapshot.refused_at if snapshot.refused_at is not None else snapshot.grew_past
    return level is not None and snapshot.limit >= AT_CAP_SHARE * (level - 1)
