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

import contextlib
import math
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Sequence

from storage.jobs.helper_handover import at_cap, hand_over, set_to_work_after_opening
from storage.jobs.helper_standby import (
    activate,
    go_line,
    prepare_standby,
    stop_when_orphaned,
    take_go,
)

# Their parts live in helper_handover.py (the shares of the limit) and helper_standby.py (the
# "go" line); importers and tests still find these names here.
__all__ = ["EarlyHelpers", "auto_scaler", "go_line", "hand_over", "interrupts_held",
           "plural_helpers", "prepare_standby", "set_to_work_after_opening", "start_helpers",
           "stop_helpers", "stop_when_orphaned", "take_go", "wait_ready"]


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
        (``at_cap``), so the provider is the bound, not this process's CPU; "learning": no
        endpoint has answered anything yet; else "below cap". An endpoint this process makes
        no call to (its run answered from the cache, or held by another worker) is not in
        use and does not count."""
        snapshots = [limiter_for(model, api_base).snapshot() for model, api_base in endpoints]
        used = [s for s in snapshots if s.answered or s.refusals]
        if not used:
            return "learning"
        return "at cap" if all(at_cap(s) for s in used) else "below cap"

    async def handover() -> list:
        """Half of this process's limit on each endpoint, for the helper set to work."""
        return (await hand_over(endpoints, 2))[0]

    def give_back(shares: list) -> None:
        for model, api_base, share, known, part in shares:
            limiter_for(model, api_base).update(
                lambda e, _now, s=share, k=known, p=part: e.take_share(e.limit + s, k,
                                                                        e.part + p))

    return AutoScaler(lambda: start_helpers(url, run_ids, 1, standby=True)[0],
                      lambda helper, shares: activate(helper, shares, run_ids), _dismiss,
                      lambda: chunks.open_chunks(sessions, run_ids),
                      refusals=refusals, provider=provider, handover=handover,
                      give_back=give_back)


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
