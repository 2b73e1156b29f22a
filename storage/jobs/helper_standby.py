"""A standby helper and its "go" line: what the grading process writes to set it to work
(``go_line``, ``activate``), what the helper does before (``prepare_standby``) and on it
(``take_go``), and how it stops when its grading process is gone."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Sequence


def go_line(shares: list | None, run_ids: Sequence[int]) -> str:
    """What a standby helper is told when it is set to work: the runs to help with, and the
    share of each endpoint's limit (``[model, api_base, share, known, part]``) it takes over
    (``hand_over``)."""
    return "go " + json.dumps({"runs": list(run_ids), "shares": shares or []}) + "\n"


def activate(helper: subprocess.Popen, shares: list | None, run_ids: Sequence[int]) -> bool:
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
