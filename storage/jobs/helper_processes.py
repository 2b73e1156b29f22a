"""The helper processes of ``rubric-workbench grade``: ``--workers N`` starts N-1 of them,
``--workers auto`` (``storage.jobs.autoscale``) one at a time on standby, set to work with a
share of this process's limit on each endpoint. A helper is a ``rubric-workbench worker``
process that takes chunks of the given runs and exits when they end."""

from __future__ import annotations

import asyncio
import contextlib
import json
import selectors
import subprocess
import sys
import time
from collections.abc import Sequence

HANDOVER_SECONDS = 30.0  # at most this long for our calls to drain to what we kept
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

    if sessions.kw["bind"].url.database in (None, "", ":memory:"):
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
        """Half of this process's limit on each endpoint, for the helper set to work. It is
        told to go once this process's own calls are within what it kept, so the provider
        never sees the two processes' calls on top of each other."""
        limiters = {(model, api_base): limiter_for(model, api_base)
                    for model, api_base in sorted(endpoints, key=str)}
        shares = [[model, api_base, *limiter.update(lambda e, _now: e.give_share())]
                  for (model, api_base), limiter in limiters.items()]
        deadline = time.monotonic() + HANDOVER_SECONDS
        while time.monotonic() < deadline and any(
                limiter.stats().in_flight > limiter.limit for limiter in limiters.values()):
            await asyncio.sleep(0.05)
        return shares

    def give_back(shares: list) -> None:
        for model, api_base, share, known, part in shares:
            limiter_for(model, api_base).update(
                lambda e, _now, s=share, k=known, p=part: e.take_share(e.limit + s, k,
                                                                        e.part + p))

    return AutoScaler(lambda: start_helpers(url, run_ids, 1, standby=True)[0],
                      _activate, _dismiss, lambda: chunks.open_chunks(sessions, run_ids),
                      refusals=refusals, provider=provider, handover=handover,
                      give_back=give_back)


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


def _activate(helper: subprocess.Popen, shares: list | None) -> bool:
    """Set a standby helper to work, with the shares of the endpoints' limits it takes over
    (``take_shares``); False when it is gone."""
    if helper.poll() is not None:
        return False
    try:
        helper.stdin.write("go " + json.dumps(shares or []) + "\n")
        helper.stdin.flush()
        helper.stdin.close()
    except (BrokenPipeError, OSError, ValueError):
        return False
    return True


def take_shares(line: str) -> bool:
    """A standby helper's "go" line: True to go to work. ``go [[model, api_base, share,
    known, part], ...]`` hands it a share of each endpoint's limit and its part of a user's
    ``--concurrency`` (``grade --workers auto``)."""
    word, _, shares = line.strip().partition(" ")
    if word != "go":
        return False
    from storage.jobs.limiter import limiter_for

    for model, api_base, share, known, part in json.loads(shares) if shares else ():
        limiter_for(model, api_base).update(
            lambda estimate, _now, s=share, k=known, p=part: estimate.take_share(s, k, p))
    return True


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


def start_helpers(url: str, run_ids: Sequence[int], count: int, *,
                  standby: bool = False, part: float | None = None) -> list[subprocess.Popen]:
    """``count`` worker processes that help with these runs and exit when they end.

    They inherit the environment (provider keys are never put on a command line). Each
    prints "ready" once it has imported litellm (``wait_ready()`` reads it); a ``standby``
    helper then waits for "go" on its standard input before it takes any work (see
    ``storage.jobs.autoscale``), and its output is discarded. ``part``: each helper's part
    of a user's ``--concurrency`` (``grading.limiter.share_ceilings``).
    """
    command = [sys.executable, "-m", "storage.cli", "worker", "--db", url, "--until-idle",
               "--poll", "0.2"]
    for run_id in run_ids:
        command += ["--run", str(run_id)]
    if standby:
        command.append("--standby")
    if part is not None:
        command += ["--part", repr(part)]
    return [subprocess.Popen(command, text=True,
                             stdin=subprocess.PIPE if standby else subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL if standby else subprocess.PIPE)
            for _ in range(count)]


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
