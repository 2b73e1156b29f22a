"""The helper processes of ``rubric-workbench grade``: ``--workers N`` starts N-1 of them,
``--workers auto`` (``storage.jobs.autoscale``) one at a time on standby, set to work with a
share of this process's limit on each endpoint. A helper is a ``rubric-workbench worker``
process that takes chunks of the given runs and exits when they end.

A helper spends seconds importing litellm before it can take any work. The first ones
(``EarlyHelpers``) are started as soon as ``grade`` has read its inputs, before the runs
exist, so that this import runs on another core while the grading process stores the
responses and imports litellm itself; they wait on standby and learn their runs from the
"go" line (measured, 200 x 8 calls at 5 ms: started after the runs, ``--workers 2`` kept
the grading process idle ~3.5 s waiting for its helper, and an ``auto`` helper, still
importing when grading turned CPU-bound, joined with 3-4 chunks of 8 left instead of 7).
``--workers N`` tells its helpers to go once its own opening round has found the provider's
cap (or shown it far away), each with an equal share of the limit
(``set_to_work_after_opening``); ``auto`` hands half of it to each helper it sets to work."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Sequence

log = logging.getLogger(__name__)

HANDOVER_SECONDS = 30.0  # at most this long for our calls to drain to what we kept
OPENING_SECONDS = 30.0  # --workers N: at most this long for the opening's answers
BUSY_WINDOW = 0.2  # ... or until the process was busy (autoscale.BUSY_SHARE) this long
OPENING_GROWTH = 4.0  # ... or until the limit grew this many times the opening's, unrefused
AT_CAP_SHARE = 0.85  # a limit this close to the refused level is at the provider's cap


def plural_helpers(count: int) -> str:
    return f"{count} helper worker{'' if count == 1 else 's'}"


def auto_scaler(url: str, sessions, run_ids: Sequence[int]):
    """The scaler of ``--workers auto``; None where helpers cannot share the database (an
    in-memory SQLite database belongs to this process alone)."""
    from storage.jobs import chunks
    from storage.jobs.autoscale import AutoScaler, ProviderState
    from storage.jobs.limiter import limiter_for
    from storage.services import runs

    if not _shareable(url):
        return None
    endpoints = {(run.model, run.settings.api_base)
                 for run in (runs.get_run(sessions, run_id) for run_id in run_ids)}

    def refusals() -> int:
        return sum(limiter_for(model, api_base).snapshot().refusals
                   for model, api_base in endpoints)

    def provider() -> ProviderState:
        """"at cap": every endpoint in use sits at the level its provider refused above
        (``_at_cap``), so the provider is the bound, not this process's CPU; "learning": no
        endpoint has answered anything yet; else "below cap". An endpoint this process makes
        no call to (its run answered from the cache, or held by another worker) is not in
        use and does not count."""
        snapshots = [limiter_for(model, api_base).snapshot() for model, api_base in endpoints]
        used = [s for s in snapshots if s.answered or s.refusals]
        if not used:
            return "learning"
        return "at cap" if all(_at_cap(s) for s in used) else "below cap"

    async def handover() -> list:
        """Half of this process's limit on each endpoint, for the helper set to work."""
        return (await hand_over(endpoints, 2))[0]

    def give_back(shares: list) -> None:
        for model, api_base, share, known, part in shares:
            limiter_for(model, api_base).update(
                lambda e, _now, s=share, k=known, p=part: e.take_share(e.limit + s, k,
                                                                        e.part + p))

    return AutoScaler(lambda: start_helpers(url, run_ids, 1, standby=True)[0],
                      lambda helper, shares: _activate(helper, shares, run_ids), _dismiss,
                      lambda: chunks.open_chunks(sessions, run_ids),
                      refusals=refusals, provider=provider, handover=handover,
                      give_back=give_back)


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
        _activate(helper, handed, run_ids)


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


def _at_cap(snapshot) -> bool:
    """The limit sits at the level the provider refused above (within the 10% a refusal
    takes off), or climbs past it (the capacity grew) to find the next cap, or it has
    reached this process's part of the user's own cap (``--concurrency``: at most that many
    calls in flight, which a second process would not add to)."""
    if (snapshot.own_ceiling is not None
            and snapshot.limit >= AT_CAP_SHARE * snapshot.own_ceiling):
        return True
    level = snapshot.refused_at if snapshot.refused_at is not None else snapshot.grew_past
    return level is not None and snapshot.limit >= AT_CAP_SHARE * (level - 1)


def go_line(shares: list | None, run_ids: Sequence[int]) -> str:
    """What a standby helper is told when it is set to work: the runs to help with, and the
    share of each endpoint's limit (``[model, api_base, share, known, part]``) it takes over
    (``hand_over``)."""
    return "go " + json.dumps({"runs": list(run_ids), "shares": shares or []}) + "\n"


def _activate(helper: subprocess.Popen, shares: list | None, run_ids: Sequence[int]) -> bool:
    """Set a standby helper to work on these runs, with the shares of the endpoints' limits
    it takes over (``take_go``); False when it is gone."""
    if helper.poll() is not None:
        return False
    try:
        helper.stdin.write(go_line(shares, run_ids))
        helper.stdin.flush()
        helper.stdin.close()
    except (BrokenPipeError, OSError, ValueError):
        return False
    return True


def take_go(line: str) -> list[int] | None:
    """A standby helper's "go" line (``go_line``): None when it is not needed after all (its
    standard input closed); else the runs it helps with (empty: those of its ``--run``),
    once it has taken the share of each endpoint's limit it was handed."""
    word, _, order = line.strip().partition(" ")
    if word != "go":
        return None
    told = json.loads(order) if order else {}
    from storage.jobs.limiter import limiter_for

    for model, api_base, share, known, part in told.get("shares", ()):
        limiter_for(model, api_base).update(
            lambda estimate, _now, s=share, k=known, p=part: estimate.take_share(s, k, p))
    return [int(run_id) for run_id in told.get("runs", ())]


async def stop_when_orphaned(stop: asyncio.Event, parent: int, every: float = 0.5) -> None:
    """Set ``stop`` once this helper's grading process (``parent``) is gone: killed with no
    time to stop its helpers (SIGKILL, the out-of-memory killer), it left them grading, and
    paying for calls, for a command that no longer ran. What they graded is stored; their
    chunks go back to the run, which the same ``grade`` command resumes."""
    while not stop.is_set():
        if os.getppid() != parent:
            print("the grade command that started this helper is gone: stopping",
                  file=sys.stderr, flush=True)
            stop.set()
            return
        await asyncio.sleep(every)


def prepare_standby(own_process: bool) -> None:
    """What a standby helper would do after "go" and can do before it, while the grading
    process stores its inputs and makes its opening round: import the migration tool and
    read the schema's head (``open_database`` checks the database against it), configure
    the ORM (its first query would), and, in a process of its own, leave the heap out of
    the garbage collector's passes (``run_options.freeze_heap``). Traced, CPU-bound
    ``--workers 2``: 0.10-0.17 s from "go" to the database being open, where it now takes
    the one query that reads the database's revision."""
    from sqlalchemy.orm import configure_mappers

    from storage import models  # noqa: F401  (the mappers to configure)
    from storage.jobs import worker  # noqa: F401  (and what it imports to execute a run)
    from storage.jobs.run_options import freeze_heap
    from storage.migrate import head_revision

    head_revision()
    configure_mappers()
    if own_process:
        freeze_heap()


def _dismiss(helper: subprocess.Popen) -> None:
    """Stop a standby helper (it may still be importing: it is not waited for to finish)."""
    with contextlib.suppress(BrokenPipeError, OSError, ValueError):
        helper.stdin.close()
    helper.terminate()
    try:
        helper.wait(10)
    except subprocess.TimeoutExpired:
        helper.kill()
        helper.wait()


@contextlib.contextmanager
def interrupts_held():
    """Hold Ctrl-C (SIGINT) until the block ends, then raise it: a helper whose fork a
    Ctrl-C interrupts is otherwise started and lost (``Popen`` never returns it, so nothing
    stops it). Only where Python's own handler is in place, on the main thread."""
    import signal
    import threading

    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if held:
        raise KeyboardInterrupt


def start_helpers(url: str, run_ids: Sequence[int], count: int, *,
                  standby: bool = False, part: float | None = None,
                  says_ready: bool | None = None) -> list[subprocess.Popen]:
    """``count`` worker processes that help with these runs and exit when they end.

    They inherit the environment (provider keys are never put on a command line). Each
    prints "ready" once it has imported litellm (``wait_ready()`` reads it unless
    ``says_ready`` is False: by default, only a helper not on standby is read); a
    ``standby`` helper then waits for "go" on its standard input (``go_line``) before it
    opens the database or takes any work, which may name its runs (``run_ids`` may then be
    empty: ``EarlyHelpers``). ``part``: each helper's part of a user's ``--concurrency``
    (``grading.limiter.share_ceilings``).
    """
    command = [sys.executable, "-m", "storage.cli", "worker", "--db", url, "--until-idle",
               "--poll", "0.2"]
    for run_id in run_ids:
        command += ["--run", str(run_id)]
    if standby:
        command.append("--standby")
    if part is not None:
        command += ["--part", repr(part)]
    if says_ready is None:
        says_ready = not standby
    # A standby helper is this process's to set to work or to stop: in its own process group,
    # a Ctrl-C at the terminal (while it imports) reaches this process only, which stops it,
    # instead of each helper printing a KeyboardInterrupt traceback of its import.
    group = {"process_group": 0} if standby and os.name == "posix" else {}
    return [subprocess.Popen(command, text=True,
                             stdin=subprocess.PIPE if standby else subprocess.DEVNULL,
                             stdout=subprocess.PIPE if says_ready else subprocess.DEVNULL,
                             **group)
            for _ in range(count)]


class EarlyHelpers:
    """The helpers ``grade`` starts before its runs exist (see the module's docstring): for
    ``--workers N``, its N-1 helpers; for ``--workers auto``, the standby helper when the work
    will be large enough to want one (``autoscale.SPARE_CHUNKS`` chunks or more) and the
    database can be shared. Those not set to work are stopped by ``dismiss()`` (the command
    ended early: a bad input, missing credentials, an interrupt)."""

    def __init__(self, url: str, workers: int | str, responses: int, runs: int):
        from storage.jobs import autoscale
        from storage.jobs.chunks import CHUNK_SIZE

        self.fixed: list[subprocess.Popen] = []
        self._working: list[subprocess.Popen] = []
        self.spare: subprocess.Popen | None = None
        if isinstance(workers, int) and workers > 1:
            self.fixed = start_helpers(url, (), workers - 1, standby=True, part=1 / workers,
                                       says_ready=True)
        elif (workers == "auto" and _shareable(url) and autoscale.helper_limit() > 0
              and math.ceil(responses / CHUNK_SIZE) * runs >= autoscale.SPARE_CHUNKS):
            self.spare = start_helpers(url, (), 1, standby=True)[0]

    def take_fixed(self) -> list[subprocess.Popen]:
        """The ``--workers N`` helpers, for the command to set to work
        (``set_to_work_after_opening``) and to stop once the runs end."""
        helpers, self.fixed = self.fixed, []
        self._working = list(helpers)
        return helpers

    def take_spare(self) -> subprocess.Popen | None:
        spare, self.spare = self.spare, None
        return spare

    def dismiss(self) -> None:
        """Stop every helper still running: on standby, or set to work by a command that did
        not get to grade with them (interrupted while they started). Those the command
        waited for have ended already."""
        waiting = [*self.fixed, *self._working,
                   *([self.spare] if self.spare is not None else [])]
        self.fixed, self._working, self.spare = [], [], None
        for helper in waiting:
            _dismiss(helper)


def _shareable(url: str) -> bool:
    """Another process can open this database (an in-memory SQLite one it cannot)."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).database not in (None, "", ":memory:")
    except Exception:  # a malformed address: the grading process reports it
        return False


def wait_ready(helpers: Sequence[subprocess.Popen], timeout: float = 300.0) -> int:
    """Wait until each helper says it is ready (litellm imported: seconds on a busy
    machine), so that they share the work from its start; returns how many are."""

    deadline = time.monotonic() + timeout
    ready = 0
    with selectors.DefaultSelector() as selector:
        for helper in helpers:
            selector.register(helper.stdout, selectors.EVENT_READ, helper)
        waiting = len(helpers)
        while waiting and time.monotonic() < deadline:
            for key, _ in selector.select(deadline - time.monotonic()):
                line = key.fileobj.readline()
                selector.unregister(key.fileobj)
                waiting -= 1
                ready += line.strip() == "ready"
    return ready


def stop_helpers(helpers: Sequence[subprocess.Popen], *, wait: bool = False) -> None:
    for helper in helpers:
        if not wait:
            helper.terminate()
    for helper in helpers:
        try:
            helper.wait(30)
        except subprocess.TimeoutExpired:
            helper.kill()
            helper.wait()
