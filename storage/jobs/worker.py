"""Workers: claim queued runs from the database and execute them.

``Worker.run(stop)`` is the loop of ``rubric-workbench worker``; ``start_in_process_worker``
runs the same loop on a daemon thread with its own event loop, once per process and database
URL, for the app (grading never runs inside a Streamlit rerun).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field

from storage.config import database_url
from storage.db_errors import describe_db_error, is_storage_fault
from storage.dto import run_status_words
from storage.engine import SessionFactory, open_database
from storage.jobs import chunks, queue
from storage.jobs.runner import RunResult, execute_run
from storage.services import runs as run_service

log = logging.getLogger(__name__)

DEFAULT_MAX_RUNS = 4


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _ended(task: asyncio.Task) -> bool:
    """A comparison task that judged its comparison to the end (judge_as_worker's True)."""
    return not task.cancelled() and task.exception() is None and task.result() is True


@dataclass
class Worker:
    """Claims runs (up to ``max_runs`` at once) and executes them until stopped."""

    sessions: SessionFactory
    worker_id: str = field(default_factory=new_worker_id)
    max_runs: int = DEFAULT_MAX_RUNS
    poll_interval: float = 1.0
    lease_seconds: float = queue.DEFAULT_LEASE_SECONDS
    concurrency: int | None = None
    progress_interval: float = 30.0  # one log line per running run this often
    # Work only on these runs (``grade --workers N`` starts helpers so); stop once they end.
    only_runs: tuple[int, ...] | None = None
    results: list[RunResult] = field(default_factory=list)
    # Judge queued pairwise comparisons too (when no run needs this worker).
    comparisons: bool = True
    # Fill new judge panels' decisions (storage.jobs.panel_fills), one at a time, beside
    # the runs: a fill is database work, not a provider's slot.
    panel_fills: bool = True
    _running: set[int] = field(default_factory=set)
    _joined: set[int] = field(default_factory=set)
    # comparison id -> (when this worker last took it, its task): never taken again while
    # its task runs, nor for a while after one that did not get to its end (another process
    # holds it, the database was away): no retry in a tight loop. One that ended is taken
    # again as soon as it is queued again (Resume).
    _comparing: dict[int, tuple[float, asyncio.Task]] = field(default_factory=dict)
    _filling: asyncio.Task | None = None
    # panel id -> when a fill of it last ended without filling it (busy elsewhere, a fault)
    _fill_tried: dict[int, float] = field(default_factory=dict)

    @property
    def heartbeat_interval(self) -> float:
        return max(0.2, min(5.0, self.lease_seconds / 4))

    async def run(self, stop: asyncio.Event, *, until_idle: bool = False) -> list[RunResult]:
        """Claim and execute runs until ``stop`` is set (or, ``until_idle``, until no run is
        queued or running anywhere).

        On stop, runs in progress go back to the queue with what they graded so far.
        """
        active: set[asyncio.Task[RunResult]] = set()
        stopping = asyncio.create_task(stop.wait())
        reporter = asyncio.create_task(self._report_progress())
        stop_fill = threading.Event()
        try:
            while not stop.is_set():
                await self._take_panel_fill(stop_fill)
                claimed = joined = None
                if len(active) < self.max_runs:
                    # With only_runs, a queued one of them is taken too: else `worker --run N
                    # --until-idle` waited forever for someone else to start run N.
                    claimed = await asyncio.to_thread(
                        queue.claim_next, self.sessions, self.worker_id,
                        lease_seconds=self.lease_seconds, exclude=tuple(self._running),
                        among=self.only_runs)
                    if claimed is None:  # help a running run with its chunks
                        joined = await asyncio.to_thread(
                            chunks.joinable_run, self.sessions, self.worker_id,
                            lease_seconds=self.lease_seconds,
                            among=self.only_runs, exclude=tuple(self._joined))
                if claimed is not None:
                    log.info("worker %s took run %s", self.worker_id, claimed)
                    self._running.add(claimed)  # before the next claim, not when it starts
                    active.add(asyncio.create_task(self._execute(claimed, stop)))
                    continue
                if joined is not None:
                    log.info("worker %s helps with run %s", self.worker_id, joined)
                    self._joined.add(joined)
                    task = asyncio.create_task(self._execute(joined, stop, helper=True))
                    task.add_done_callback(lambda _t, run=joined: self._joined.discard(run))
                    active.add(task)
                    continue
                if await self._take_comparison(active):
                    continue
                filling = self._filling is not None and not self._filling.done()
                if until_idle and not active and not filling and not await asyncio.to_thread(
                        queue.has_active_runs, self.sessions, self.only_runs):
                    break
                waiting = {stopping, *active}
                done, _ = await asyncio.wait(waiting, timeout=self.poll_interval,
                                             return_when=asyncio.FIRST_COMPLETED)
                for task in done - {stopping}:
                    active.discard(task)
                    if isinstance(task.result(), RunResult):
                        self.results.append(task.result())
            if active:
                for task in await asyncio.gather(*active, return_exceptions=True):
                    if isinstance(task, RunResult):
                        self.results.append(task)
        finally:
            stopping.cancel()
            reporter.cancel()
            stop_fill.set()  # a fill stops after its chunk, its claim released for the next
            if self._filling is not None:
                await asyncio.gather(self._filling, return_exceptions=True)
        return self.results

    async def _take_panel_fill(self, stop_fill: threading.Event) -> None:
        """Start filling a waiting panel (storage.jobs.panel_fills) on a thread, when this
        worker fills none; a panel whose fill just ended unfilled waits a while."""
        if not self.panel_fills or self.only_runs is not None:
            return
        if self._filling is not None and not self._filling.done():
            return
        from storage.jobs.panel_fills import STALE_SECONDS, fill_as_worker, next_fill

        now = time.monotonic()
        recent = tuple(p for p, at in self._fill_tried.items() if now - at < STALE_SECONDS)
        try:
            found = await asyncio.to_thread(next_fill, self.sessions, exclude=recent)
        except Exception as exc:  # the database briefly away: the next poll tries again
            if not is_storage_fault(exc):
                raise
            return
        if found is None:
            return
        log.info("worker %s fills judge panel %s", self.worker_id, found)

        async def fill(panel_id: int = found) -> None:
            if not await asyncio.to_thread(fill_as_worker, self.sessions, panel_id,
                                           self.worker_id, stop_fill):
                self._fill_tried[panel_id] = time.monotonic()

        self._filling = asyncio.create_task(fill())

    async def _report_progress(self) -> None:
        from storage.jobs.progress import run_progress

        while True:
            await asyncio.sleep(self.progress_interval)
            for run_id in sorted(self._running):
                try:
                    p = await asyncio.to_thread(run_progress, self.sessions, run_id)
                except Exception:
                    continue
                rate = f", {p.rate_per_s:.1f}/s" if p.rate_per_s else ""
                notice = f"; {p.notice}" if p.notice else ""
                log.info("run %s: %s/%s graded, %s failed, %s provider calls%s%s", run_id,
                         p.done, p.total, p.failed, p.provider_calls, rate, notice)

    async def _take_comparison(self, active: set[asyncio.Task]) -> bool:
        """Start judging a waiting comparison (a Compare page's, or one whose process
        stopped) when no run needs this worker; True when one was started."""
        if not self.comparisons or self.only_runs is not None or len(active) >= self.max_runs:
            return False
        from storage.jobs.comparison_queue import judge_as_worker, next_comparison
        from storage.jobs.comparison_runner import STALE_SECONDS

        now = time.monotonic()
        recent = tuple(c for c, (at, task) in self._comparing.items()
                       if not task.done() or (now - at < STALE_SECONDS and not _ended(task)))
        try:
            found = await asyncio.to_thread(next_comparison, self.sessions,
                                            stale_after=STALE_SECONDS, exclude=recent)
        except Exception as exc:  # the database briefly away: the next poll tries again
            if not is_storage_fault(exc):
                raise
            return False
        if found is None:
            return False
        log.info("worker %s judges comparison %s", self.worker_id, found)
        task = asyncio.create_task(judge_as_worker(self.sessions, found, self.worker_id))
        self._comparing[found] = (now, task)
        active.add(task)
        return True

    async def _execute(self, run_id: int, stop: asyncio.Event, helper: bool = False
                       ) -> RunResult:
        self._running.add(run_id)
        try:
            return await self._execute_one(run_id, stop, helper)
        finally:
            self._running.discard(run_id)

    async def _execute_one(self, run_id: int, stop: asyncio.Event, helper: bool
                           ) -> RunResult:
        try:
            result = await execute_run(
                self.sessions, run_id, worker_id=self.worker_id, concurrency=self.concurrency,
                heartbeat_interval=self.heartbeat_interval, stop=stop, helper=helper,
                lease_seconds=self.lease_seconds,
            )
        except Exception as exc:
            # A bug or a lost database: fail the run rather than take it over again and
            # again; if the database is gone too, the lease expires and a worker retries.
            log.exception("run %s stopped with an unexpected error", run_id)
            error = ("the worker stopped on an unexpected error: "
                     f"{describe_db_error(exc) if is_storage_fault(exc) else type(exc).__name__}")
            with contextlib.suppress(Exception):
                await asyncio.to_thread(run_service.fail_run, self.sessions, run_id, error)
            return RunResult(run_id=run_id, status="failed", graded=0, failed=0,
                             provider_calls=0, cache_hits=0, rate_limited=0, error=error)
        log.info("run %s ended %s: %s graded, %s failed", run_id,
                 run_status_words(result.status, result.failed, result.error),
                 result.graded - result.failed, result.failed)
        return result


class WorkerHandle:
    """A worker running on a daemon thread with its own event loop."""

    def __init__(self, url: str, worker: Worker):
        self.url = url
        self.worker = worker
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(
            target=self._main, name=f"rubric-workbench-worker {worker.worker_id}", daemon=True)
        self._thread.start()
        self._ready.wait(10)

    @property
    def worker_id(self) -> str:
        return self.worker.worker_id

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        except Exception:
            log.exception("the in-process worker stopped with an error")
        finally:
            _close_loop(self._loop)

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        self._ready.set()
        await self.worker.run(self._stop)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop claiming; runs in progress go back to the queue. Waits for the thread."""
        if self._stop is not None and self.alive:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close the loop as ``asyncio.run`` does: cancel what is left on it first. litellm starts
    a logging task on every loop it is called from; left pending, it would be destroyed at
    whatever moment the garbage collector runs, logging from inside unrelated code."""
    try:
        left = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    except Exception:
        log.exception("could not shut the in-process worker's event loop down cleanly")
    finally:
        loop.close()


_handles: dict[str, WorkerHandle] = {}
_handles_lock = threading.Lock()


def start_in_process_worker(url: str | None = None, **worker_options) -> WorkerHandle:
    """The process's background worker for database ``url`` (default: the configured one).

    Idempotent per process and URL: a second call returns the running worker, so it is safe
    to call from ``st.cache_resource`` or on every rerun.
    """
    url = url or database_url()
    with _handles_lock:
        handle = _handles.get(url)
        if handle is not None and handle.alive:
            return handle
        sessions = open_database(url)
        handle = _handles[url] = WorkerHandle(url, Worker(sessions, **worker_options))
        return handle


def stop_in_process_workers() -> None:
    """Stop every in-process worker (tests, and a clean shutdown)."""
    with _handles_lock:
        handles = list(_handles.values())
        _handles.clear()
    for handle in handles:
        handle.stop()
