"""Executes one grading run: grades the responses that have no stored grade yet.

Grades are stored a few at a time as they complete (``storage.jobs.grade_writer``). A
failed grade is stored as a failed grade (score None + error) and the run goes on; the run is
``failed`` only when nothing can work (no credentials, unknown model), with what to do.
Provider calls go cache -> adaptive limiter -> litellm.

The worker holding the run (its owner) cuts the work into chunks (``storage.jobs.chunks``);
it and any helper workers that join claim chunks, so several processes split one run. After
the first pass, grades that failed only transiently get later passes (``storage.jobs.passes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math

from grading.calibration import RubricExamples
from grading.errors import ConfigurationError
from grading.llm import LiteLLMGenerate
from grading.types import Criterion
from storage.dto import RunInfo
from storage.engine import SessionFactory, retry_db
from storage.jobs import cache as cache_store
from storage.jobs import chunks as chunk_store
from storage.jobs import passes, queue
from storage.jobs.breaker import StoreBreaker
from storage.jobs.calls import Counters, JobGenerate, missing_credentials
from storage.jobs.chunk_grading import ChunkGradingMixin
from storage.jobs.cost_budget import CostBudget
from storage.jobs.grade_writer import GradeWriter
from storage.jobs.limiter import CapacitySharing, endpoint_name, limiter_for
from storage.jobs.notices import get_notice, queued, set_notice
from storage.jobs.provider_breaker import ProviderBreaker
from storage.jobs.run_cost_cap import CostCapMixin
from storage.jobs.run_finish import FinishingMixin
from storage.jobs.run_heartbeat import HeartbeatMixin
from storage.jobs.run_options import (
    JobOptions,
    Window,
    build_grader,
    calls_per_response,
    preload_litellm,
)
from storage.jobs.run_result import RunResult
from storage.services import calibration as calibration_service
from storage.services import rubrics as rubric_service
from storage.services import runs as run_service

# Imported from here by callers (the CLI, the Grade page, the worker).
__all__ = ["RunExecution", "RunResult", "execute_run", "missing_credentials"]

log = logging.getLogger(__name__)


class RunExecution(CostCapMixin, HeartbeatMixin, ChunkGradingMixin, FinishingMixin):
    """The state of one run being executed by one worker (its owner, or a helper).

    Its jobs live in mixins named for them; this class holds the state and the halt."""

    def __init__(
        self, sessions: SessionFactory, run: RunInfo, criteria: list[Criterion], *,
        worker_id: str, concurrency: int | None, heartbeat_interval: float,
        stop: asyncio.Event | None, helper: bool = False,
        lease_seconds: float = queue.DEFAULT_LEASE_SECONDS,
        examples: RubricExamples | None = None, paused: str | None = None,
    ):
        self.sessions = sessions
        self.run = run
        self.criteria = criteria
        self.worker_id = worker_id
        self.heartbeat_interval = heartbeat_interval
        self.lease_seconds = lease_seconds
        self.stop = stop
        self.helper = helper
        self.options = JobOptions.from_settings(run.settings)
        self.counters = Counters()
        self.totals = Counters()
        self.fatal: BaseException | None = None
        # "cancelled", "lost", "stopped", "capped", "paused" or "fatal"
        self.halt: str | None = None
        self._finishing = False
        self._outcomes: dict[int, bool] = {}  # response id -> its stored grade failed
        self.unstored = 0
        self.unstored_error: str | None = None
        self.passes = 0
        # known cost so far, and what may start under the cost cap
        self.budget = CostBudget(self.options.cost_cap, run.cost or 0.0, run.graded_count)
        self.price_settings = {"price": run.settings.price.model_dump()
                               if run.settings.price else None}
        self.capped: str | None = None  # why the cost cap stopped the run
        self.limiter = limiter_for(run.model, run.settings.api_base,
                                   self.options.concurrency or concurrency)
        self.sharing = CapacitySharing(sessions, self.limiter,
                                       endpoint_name(run.model, run.settings.api_base),
                                       worker_id)
        llm = LiteLLMGenerate(run.model, api_base=run.settings.api_base,
                              timeout=min(self.options.timeout, self.options.call_deadline),
                              **self.options.litellm_extra)
        self.notice: str | None = None
        self._notice_shown: str | None = None
        self._notice_lock = asyncio.Lock()
        # a write's thread and its notice, while the write is out
        self._notice_write: tuple[asyncio.Future, str | None] | None = None
        self.breaker = StoreBreaker(on_change=self._set_notice)
        # ``paused``: the notice the run's last execution left (a provider pause to probe)
        provider = run.model + (f" at {run.settings.api_base}" if run.settings.api_base else "")
        self.provider_breaker = ProviderBreaker(
            self.options.pause_after, provider, on_trip=self._on_pause,
            on_close=lambda: self._set_notice(None),
            halting=lambda: self.halt is not None or self._finishing, paused=paused)
        self.notice = self.provider_breaker.probe_notice
        if not helper:  # what the database holds: a pause cleared at the end is written
            self._notice_shown = paused
        job_generate = JobGenerate(
            llm, limiter=self.limiter, sessions=sessions, use_cache=self.options.use_cache,
            counters=self.counters, cache_buffer=cache_store.WriteBuffer(sessions),
            on_fatal=self._on_fatal, gate=self.breaker.wait_closed, on_notice=self._set_notice,
            breaker=self.provider_breaker,
        )
        job_generate.attempts = 1 + self.options.retry_passes
        self.calls = job_generate
        self.generate = passes.TrackedGenerate(job_generate)
        self.writer = GradeWriter(sessions, run.id, self.breaker, on_stored=self._stored,
                                  on_unstored=self._unstored,
                                  before_store=job_generate.flush_cache)
        self.grader = build_grader(run.grader, self.generate, run.settings,
                                   self.options.transport_retries, examples)
        per_response = calls_per_response(run.grader, len(criteria), run.settings.samples)
        # The run's remaining work widens the limiter's opening (before any answer), as a
        # library caller's queued calls do (``CapacityEstimate.expect``).
        waiting = max(0, run.response_count - run.graded_count) * per_response
        self.limiter.update(lambda estimate, _now: estimate.expect(waiting))
        self.window = Window(
            lambda: max(2, math.ceil(2 * self.limiter.limit / per_response) + 2))
        # Chunks by their whole row, not by id: SQLite hands a replanned pass's chunks the ids
        # of the last pass's (deleted) ones, and a chunk of pass 1 wrongly seen as lost (a
        # heartbeat that raced its finish) made pass 2 skip the new chunk with its id.
        self.my_chunks: set[chunk_store.Chunk] = set()
        self.lost_chunks: set[chunk_store.Chunk] = set()
        self._wake = asyncio.Event()
        self._beat_failed_at = 0.0
        self._share_failed_at = float("-inf")

    def _on_fatal(self, exc: BaseException) -> None:
        if self.fatal is None:
            self.fatal = exc
            self._halt("fatal")

    def _on_pause(self, reason: str) -> None:
        log.warning("run %s %s", self.run.id, reason)
        self._halt("paused")

    def _set_notice(self, notice: str | None) -> None:
        if notice is None and self.breaker.open:
            return  # a paused run keeps saying so until stores work again
        self.notice = notice

    def _shown_notice(self) -> str | None:
        """The notice, or else what the limiter learned that slows the run: a server that
        queues calls beyond a few at once (``grading.capacity.queue``)."""
        if self.notice is not None or self.helper:
            return self.notice
        slots = self.limiter.snapshot().queue_slots
        return queued(slots) if slots is not None else None

    async def _show_notice(self) -> None:
        """Write the notice when it changed, one write at a time. A write runs in a thread
        that a cancelled caller (the heartbeat, stopped as the run ends) cannot stop: the next
        write waits for it, or the heartbeat's older notice could land after the run's last
        one (a pause's reason lost, and the resumed run not probing first)."""
        async with self._notice_lock:
            if self._notice_write is not None:  # left running by a cancelled caller
                written, notice = self._notice_write
                outcome, = await asyncio.gather(written, return_exceptions=True)
                if not isinstance(outcome, BaseException):
                    self._notice_shown = notice
                self._notice_write = None
            notice = self._shown_notice()
            if notice == self._notice_shown:
                return
            written = asyncio.ensure_future(
                asyncio.to_thread(set_notice, self.sessions, self.run.id, notice))
            self._notice_write = (written, notice)
            await asyncio.shield(written)
            self._notice_write = None
            self._notice_shown = notice

    def _halt(self, why: str) -> None:
        if self.halt is None:
            self.halt = why
        self._wake.set()

    async def _wait_halt_or(self, awaitable) -> bool:
        """Await ``awaitable`` unless the run halts first; True when it completed."""
        task = asyncio.ensure_future(awaitable)
        halted = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({task, halted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            halted.cancel()
        if task.done():
            return True
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return False

    async def execute(self) -> RunResult:
        problem = missing_credentials(self.run.model, self.run.settings.api_base)
        if problem is not None:
            if self.helper:
                return self._result("running")
            return await self._finish_failed(problem)
        self._check_cost_cap()
        if self.capped is not None:
            return self._result("running") if self.helper else \
                await self._finish_failed(self.capped)
        # The heartbeat starts with the claim: the import below can take longer than a lease
        # on a slow machine, and a run without heartbeats looks abandoned to other workers.
        helpers = [asyncio.create_task(self._heartbeat()),
                   asyncio.create_task(self._share_capacity()),
                   asyncio.create_task(self._watch_cancel())]
        if self.stop is not None:
            helpers.append(asyncio.create_task(self._watch_stop()))
        tasks: set[asyncio.Task] = set()
        try:
            # Import litellm (seconds of CPU) before claiming chunks: an import inside the
            # first call would block the event loop, and with it the heartbeats.
            await asyncio.to_thread(preload_litellm)
            unpriced = self._unpriced_cap()
            if unpriced is not None:  # before any call: the cap could never be reached
                self._on_fatal(ConfigurationError(unpriced))
            else:
                await self._run_passes(tasks)
        finally:
            self._finishing = True  # calls cut off from now on are not timeouts
            for task in list(tasks):
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._store_the_rest()
            for helper in helpers:
                helper.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            for chunk in list(self.my_chunks):
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(chunk_store.release_chunk, self.sessions,
                                            chunk.id, self.worker_id)
            await self.generate.close()
            await asyncio.to_thread(retry_db, self._flush_counters_sync)
            # A pause, or a probe that got no answer, is remembered for the next resume.
            self.notice = None if self.helper else (self.provider_breaker.reason
                                                    or self.provider_breaker.probe_notice)
            with contextlib.suppress(Exception):
                await self._show_notice()
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.sharing.sync)
        return await self._conclude()


async def execute_run(
    sessions: SessionFactory, run_id: int, *, worker_id: str, concurrency: int | None = None,
    heartbeat_interval: float = 5.0, stop: asyncio.Event | None = None, helper: bool = False,
    lease_seconds: float = queue.DEFAULT_LEASE_SECONDS,
) -> RunResult:
    """Grade what run ``run_id`` still has to grade: as its owner (it is claimed by
    ``worker_id``), or as a ``helper`` taking chunks of a run another worker owns."""
    run = await asyncio.to_thread(retry_db, run_service.get_run, sessions, run_id)
    version = await asyncio.to_thread(retry_db, rubric_service.get_version, sessions,
                                      run.rubric_version_id)
    # The examples recorded at launch, never drawn again: a requeued, resumed or helped run
    # shows its judge exactly the same ones.
    examples = await asyncio.to_thread(retry_db, calibration_service.load_examples, sessions,
                                       run_id)
    paused = await asyncio.to_thread(retry_db, get_notice, sessions, run_id)
    execution = RunExecution(
        sessions, run, version.to_criteria(), worker_id=worker_id, concurrency=concurrency,
        heartbeat_interval=heartbeat_interval, stop=stop, helper=helper,
        lease_seconds=lease_seconds, examples=examples, paused=paused,
    )
    return await execution.execute()
