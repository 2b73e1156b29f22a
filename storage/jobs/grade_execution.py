"""Grading the ``grade`` command's runs in this process (helpers and a progress bar beside
it), then its summary and ``--out``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Sequence

from storage.atomic_file import atomic_text_file
from storage.jobs.cli_common import EXIT_FAILED_GRADES, error
from storage.jobs.grade_progress import draw, summary


async def grade_all(sessions, run_ids: Sequence[int], claimed: Sequence[int], worker_id: str,
                    *, show_bar: bool, scaler=None, helpers: Sequence = ()) -> None:
    from storage.jobs.helper_handover import set_to_work_after_opening
    from storage.jobs.runner import execute_run

    work = asyncio.gather(
        *(execute_run(sessions, run_id, worker_id=worker_id) for run_id in claimed),
        *(_wait_finished(sessions, run_id) for run_id in run_ids if run_id not in claimed))
    aside = [asyncio.create_task(scaler.run())] if scaler is not None else []
    if helpers:
        aside.append(asyncio.create_task(set_to_work_after_opening(sessions, run_ids, helpers)))
    if show_bar:
        aside.append(asyncio.create_task(_progress_bar(sessions, run_ids)))
    try:
        await work
    finally:
        for task in aside:
            task.cancel()
        await asyncio.gather(*aside, return_exceptions=True)
        if scaler is not None:
            await asyncio.to_thread(scaler.close)
        if show_bar:
            with contextlib.suppress(Exception):
                draw(sessions, run_ids, final=True)


async def _wait_finished(sessions, run_id: int) -> None:
    """Wait for a run another live worker holds (a dead one's run is taken over)."""
    from storage.db_errors import is_storage_fault
    from storage.jobs import queue
    from storage.jobs.runner import execute_run
    from storage.jobs.worker import new_worker_id
    from storage.services import runs

    while True:
        try:
            if (await asyncio.to_thread(runs.get_run, sessions, run_id)).finished:
                return
            worker_id = new_worker_id()
            if await asyncio.to_thread(queue.claim_run, sessions, run_id, worker_id):
                await execute_run(sessions, run_id, worker_id=worker_id)
                continue
        except Exception as exc:
            if not is_storage_fault(exc):
                raise
        await asyncio.sleep(0.5)


async def _progress_bar(sessions, run_ids: Sequence[int]) -> None:
    while True:
        with contextlib.suppress(Exception):  # the database may be restarting: skip a frame
            await asyncio.to_thread(draw, sessions, run_ids)
        await asyncio.sleep(0.5)


def report(sessions, args: argparse.Namespace, run_ids: Sequence[int], made_panels,
           wall: float) -> int:
    """The summary of a finished ``grade``, its panels, and ``--out``; the exit status."""
    from storage.engine import retry_db

    status = retry_db(summary, sessions, run_ids, wall)
    for panel in made_panels:
        print(f"judge panel {panel.id}: {panel.rule} of runs "
              f"{', '.join(str(m.run.id) for m in panel.members)}; export with: "
              f"rubric-workbench panel export {panel.id}")
    if args.out:
        from storage.exports import write_results

        fmt = "csv" if args.out.lower().endswith(".csv") else "jsonl"
        try:
            with atomic_text_file(args.out) as target:
                # the panels' records after the members', exactly as `export --panel` writes
                count = write_results(sessions, run_ids, target, fmt,
                                      [p.id for p in made_panels])
        except OSError as exc:
            error(f"cannot write {args.out}: {exc.strerror}")
            return EXIT_FAILED_GRADES
        print(f"wrote {count} records to {args.out}", file=sys.stderr)
    return status
