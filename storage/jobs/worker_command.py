"""``rubric-workbench worker``: execute queued grading runs from the database until stopped
(also the helper process that ``grade --workers`` starts)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

from storage.config import add_db_argument, database_url, describe_url
from storage.jobs.cli_common import (
    EXIT_FAILED_GRADES,
    EXIT_OK,
    EXIT_USAGE,
    configure_logging,
    error,
    guarded,
)
from storage.jobs.helper_standby import prepare_standby, stop_when_orphaned, take_go


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    from storage.jobs.queue import DEFAULT_LEASE_SECONDS
    from storage.jobs.worker import DEFAULT_MAX_RUNS

    add_db_argument(parser)
    parser.add_argument("--concurrency", type=int, default=None,
                        help="at most this many calls in flight per model in this process "
                             "(each worker applies its own) unless a run sets it (default: "
                             "no cap; the capacity is discovered)")
    parser.add_argument("--max-runs", type=int, default=DEFAULT_MAX_RUNS,
                        help="runs executed at once by this worker")
    parser.add_argument("--lease", type=float, default=DEFAULT_LEASE_SECONDS,
                        help="seconds without a heartbeat after which a run is taken over")
    parser.add_argument("--poll", type=float, default=1.0,
                        help="seconds between looks at the queue when it is empty")
    parser.add_argument("--until-idle", action="store_true",
                        help="exit once no run is queued or running, instead of waiting")
    parser.add_argument("--verbose", action="store_true",
                        help="log every provider request (default: one progress line per run "
                             "every 30 s)")
    parser.add_argument("--run", type=int, action="append", default=None, metavar="RUN_ID",
                        help="help only with these runs (repeat for several); with "
                             "--until-idle, exit once they are finished")
    # A helper of ``grade --workers auto``: ready, then waits for "go" on stdin (or exits).
    parser.add_argument("--standby", action="store_true", help=argparse.SUPPRESS)
    # A helper of ``grade --workers N``: its part of a run's --concurrency (1/N).
    parser.add_argument("--part", type=float, default=None, help=argparse.SUPPRESS)


@guarded
def worker_command(args: argparse.Namespace) -> int:
    from storage.engine import open_database
    from storage.jobs.worker import Worker

    configure_logging(args.verbose)
    url = args.db or database_url()
    parent = os.getppid()  # a standby helper's grading process: it stops when that is gone
    if args.part is not None:
        from grading.limiter import share_ceilings

        share_ceilings(args.part)
    only_runs = tuple(args.run) if args.run else None
    if args.run or args.standby:  # a helper of ``grade``: it may wait for this line
        from storage.jobs.run_options import preload_litellm

        preload_litellm()
        try:
            print("ready", flush=True)
        except BrokenPipeError:  # the grading process is gone (interrupted): nobody to help
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_OK
    if args.standby:  # the database is opened once told to go: its runs may not exist yet
        prepare_standby(getattr(args, "own_process", False))
        told = take_go(sys.stdin.readline())
        if told is None:
            return EXIT_OK  # not needed after all
        only_runs = tuple(told) or only_runs
        if not only_runs:  # a helper helps with given runs: never any run of the database
            error("a standby helper was told to go without any run; nothing to do")
            return EXIT_USAGE
    sessions = open_database(url)
    if sessions.kw["bind"].dialect.name == "sqlite" and not only_runs:
        print("warning: the database is SQLite: run only one worker on it (several are safe "
              "but only slow each other down); use PostgreSQL for several workers",
              file=sys.stderr)
    worker = Worker(sessions, max_runs=args.max_runs, poll_interval=args.poll,
                    lease_seconds=args.lease, concurrency=args.concurrency,
                    only_runs=only_runs)
    print(f"worker {worker.worker_id} on {describe_url(url)}", file=sys.stderr, flush=True)

    from storage.jobs.run_options import freeze_heap, preload_litellm

    preload_litellm()
    if getattr(args, "own_process", False):
        freeze_heap()

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        orphaned = (asyncio.create_task(stop_when_orphaned(stop, parent)) if args.standby
                    else None)
        try:
            await worker.run(stop, until_idle=args.until_idle)
        finally:
            if orphaned is not None:
                orphaned.cancel()

    asyncio.run(serve())
    failed = sum(1 for r in worker.results if r.status == "failed" or r.failed)
    return EXIT_FAILED_GRADES if failed else EXIT_OK
