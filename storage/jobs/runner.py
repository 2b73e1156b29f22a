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
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial

from grading.calibration import RubricExamples
from grading.errors import ConfigurationError
from grading.llm import LiteLLMGenerate
from grading.redact import redact
from grading.types import Criterion, EvaluationReport
from storage.db_errors import describe_db_error
from storage.dto import COST_CAP_STOP, GradeInfo, ResponseInfo, RunInfo
from storage.engine import SessionFactory, retry_db
from storage.errors import InvalidStateError, RunCancelledError
from storage.jobs import cache as cache_store
from storage.jobs import chunks as chunk_store
from storage.jobs import passes, queue
from storage.jobs.breaker import StoreBreaker
from storage.jobs.calls import Counters, JobGenerate, missing_credentials
from storage.jobs.cost_budget import CostBudget
from storage.jobs.grade_writer import GradeWriter
from storage.jobs.limiter import SYNC_INTERVAL, CapacitySharing, endpoint_name, limiter_for
from storage.jobs.notices import get_notice, queued, set_notice
from storage.jobs.provider_breaker import ProviderBreaker
from storage.jobs.run_options import (
    JobOptions,
    Window,
    build_grader,
    calls_per_response,
    preload_litellm,
)
from storage.services import calibration as calibration_service
from storage.services import datasets as dataset_service
from storage.services import rubrics as rubric_service
from storage.services import runs as run_service
from storage.services.grade_records import NewGrade, priced_cost

log = logging.getLogger(__name__)

# How long a stopping run waits for the database to take the grades it has made.
FINAL_STORE_SECONDS = 120.0
# The owner's first look, once its own grades are done, at chunks other workers still hold;
# each look after waits half as long again, up to a second. The run (and the command) ends
# up to one pause after the last chunk does: a look is one small query, and the pauses
# doubling from 0.05 s held ``grade --workers 2`` 0.06-0.07 s past the helper's last call
# (traced).
FIRST_LOOK = 0.02
LOOK_GROWTH = 1.5
# How often a run looks whether it was cancelled (one primary-key read): a cancel stops new
# provider calls within this, not at the next heartbeat. Grades in flight then are not
# stored (``record_grades`` refuses them once the cancel is committed); their answers are
# in the cache, so a requeue does not pay for them again.
CANCEL_LOOK_SECONDS = 0.25


@dataclass(frozen=True)
class RunResult:
    run_id: int
    status: str
    graded: int
    failed: int
    provider_calls: int
    cache_hits: int
    rate_limited: int
    error: str | None = None
    passes: int = 0


class RunExecution:
    """The state of one run being executed by one worker (its owner, or a helper)."""

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

    @property
    def spent(self) -> float:
        return self.budget.spent

    def _check_cost_cap(self) -> None:
        cap = self.options.cost_cap
        if cap is not None and self.budget.reached() and self.capped is None:
            self._stop_at_cap("")

    def _stop_at_cap(self, why: str) -> None:
        self.capped = (f"{COST_CAP_STOP} (${self.options.cost_cap:g}) after spending "
                       f"${self.spent:.4f}{why}; the responses not graded yet stay pending: "
                       "launch again with a higher cap to grade them")
        self._halt("capped")

    async def _admit(self) -> bool:
        """Whether one more response may start under the cost cap (``CostBudget``): it waits
        while the responses in flight might take the run past it; when even one more would
        (at the average cost of a response so far), the run stops before the cap."""
        admitted = asyncio.ensure_future(self.budget.admit())
        if not await self._wait_halt_or(admitted) or self.halt:
            if admitted.done() and not admitted.cancelled() and admitted.result():
                self.budget.finished(None)  # admitted, never started
            return False
        if admitted.result():
            return True
        if self.capped is None:
            average = self.budget.average or 0.0
            self._stop_at_cap(f": one more response (about ${average:.4f} each) would have "
                              "gone over it" if self.budget.full else "")
        return False

    def _unpriced_cap(self) -> str | None:
        """Why a cost cap cannot be kept (no price for the model: its cost stays unknown)."""
        if self.options.cost_cap is None or self.run.settings.price is not None:
            return None
        from storage.jobs.estimate import price

        if price(self.run.model, 1000, 1000)[0] is not None:
            return None
        return (f"the cost cap (${self.options.cost_cap:g}) cannot be kept: there is no price "
                f"for {self.run.model}, so its cost stays unknown; set its price per million "
                "tokens in Settings and launch again, or launch without a cap")

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
        notice = self._shown_notice()
        if notice != self._notice_shown:
            await asyncio.to_thread(set_notice, self.sessions, self.run.id, notice)
            self._notice_shown = notice

    def _halt(self, why: str) -> None:
        if self.halt is None:
            self.halt = why
        self._wake.set()

    def _flush_counters_sync(self) -> None:
        taken = self.counters.take()
        for name, value in taken.items():
            setattr(self.totals, name, getattr(self.totals, name) + value)
        try:
            queue.add_job_stats(self.sessions, self.run.id, **taken)
        except Exception:
            for name, value in taken.items():  # counted again at the next try
                setattr(self.totals, name, getattr(self.totals, name) - value)
                setattr(self.counters, name, getattr(self.counters, name) + value)
            raise

    async def _flush_counters(self) -> None:
        taken = self.counters.take()
        for name, value in taken.items():
            setattr(self.totals, name, getattr(self.totals, name) + value)
        await asyncio.to_thread(queue.add_job_stats, self.sessions, self.run.id, **taken)

    async def _renew(self) -> str:
        held = list(self.my_chunks)
        kept = await asyncio.to_thread(chunk_store.renew_chunks, self.sessions,
                                       self.worker_id, [chunk.id for chunk in held])
        # Taken over: grade no more of them. A chunk finished while the beat was on its way
        # is not ours to renew any more, but it is not lost either.
        self.lost_chunks.update(chunk for chunk in held
                                if chunk.id not in kept and chunk in self.my_chunks)
        if not self.helper:
            return await asyncio.to_thread(queue.renew, self.sessions, self.run.id,
                                           self.worker_id)
        info = await asyncio.to_thread(run_service.get_run, self.sessions, self.run.id)
        return "ok" if info.status == "running" else "cancelled"

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            try:
                state = await self._renew()
                await self._flush_counters()
                await self._show_notice()
            except Exception as exc:  # the database may be back at the next beat; the lease
                if time.monotonic() - self._beat_failed_at > 60:  # says how long to wait
                    self._beat_failed_at = time.monotonic()
                    log.warning("heartbeat of run %s failed: %s", self.run.id,
                                describe_db_error(exc))
                continue
            if state != "ok":
                self._halt(state)
                return

    async def _share_capacity(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.sharing.sync)
            except Exception as exc:  # sharing is an optimisation: the limiter works alone
                # One sentence a minute at most: every 2.5 s with a traceback buried the log
                # of a paused run.
                if time.monotonic() - self._share_failed_at > 60:
                    self._share_failed_at = time.monotonic()
                    log.warning("could not share the capacity of %s (tried again every "
                                "%g s; said once a minute): %s", self.sharing.endpoint,
                                SYNC_INTERVAL, describe_db_error(exc))
            await asyncio.sleep(SYNC_INTERVAL)

    async def _watch_cancel(self) -> None:
        while True:
            await asyncio.sleep(CANCEL_LOOK_SECONDS)
            with contextlib.suppress(Exception):  # the heartbeat says what is wrong
                status = await asyncio.to_thread(run_service.run_status, self.sessions,
                                                 self.run.id)
                if status in ("cancelled", None):
                    self._halt("cancelled")
                    return

    async def _watch_stop(self) -> None:
        assert self.stop is not None
        await self.stop.wait()
        self._halt("stopped")

    async def _grade_one(self, response: ResponseInfo) -> None:
        counted = False
        try:
            started = time.monotonic()
            calls = passes.track_grade()
            try:
                report = await self.grader.grade(response.to_grade, self.criteria,
                                                 query=response.query,
                                                 response_key=response.id,
                                                 reference_submission=response.reference)
            except Exception as exc:  # a bug must not end the run; it is logged in full
                log.exception("grading response %s of run %s failed", response.id,
                              self.run.id)
                report = EvaluationReport(
                    score=None, error=redact(f"unexpected error: {type(exc).__name__}: {exc}"))
            if self.fatal is not None:
                return  # not this response's fault: it stays pending for a requeue
            # Counted when the answer is in, not when its batch is stored: the calls are paid
            # for either way, and a batch may wait a quarter of a second for company.
            self.budget.finished(priced_cost(report, self.price_settings) or 0.0)
            counted = True
            self._check_cost_cap()
            self.writer.add(NewGrade(response.id, report, time.monotonic() - started,
                                     transient=calls.failed_transiently(report)))
        finally:
            if not counted:
                self.budget.finished(None)
            self.window.release()

    def _stored(self, grade: NewGrade, stored: GradeInfo) -> None:
        # By response: a retry pass's grade replaces the failed one it stored before.
        self._outcomes[grade.response_id] = (grade.report.score is None
                                             and grade.report.error is not None)

    @property
    def graded(self) -> int:
        return len(self._outcomes)

    @property
    def failed(self) -> int:
        return sum(self._outcomes.values())

    def _unstored(self, _grade: NewGrade, exc: Exception) -> None:
        """The response stays pending; the run says so at the end."""
        if isinstance(exc, RunCancelledError):
            self._halt("cancelled")  # not a fault: the run was cancelled under us
            return
        self.unstored += 1
        self.unstored_error = self.unstored_error or describe_db_error(exc)

    async def _finish_chunk(self, chunk: chunk_store.Chunk, tasks: list[asyncio.Task]) -> None:
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.writer.flush()  # a chunk is done only once its grades are stored
        if not self.halt:
            await self.breaker.store(chunk_store.finish_chunk, self.sessions, chunk.id,
                                     self.worker_id)
        self.my_chunks.discard(chunk)

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

    def _claim_chunk(self) -> chunk_store.Chunk | None:
        return chunk_store.claim_chunk(self.sessions, self.run.id, self.worker_id,
                                       lease_seconds=self.lease_seconds)

    async def _work_chunks(self, tasks: set[asyncio.Task]) -> None:
        """Claim chunks and start their grades until no chunk is left to claim."""
        while not self.halt:
            chunk = await self.breaker.store(self._claim_chunk)
            if chunk is None:
                return
            self.my_chunks.add(chunk)
            pending = await self.breaker.store(chunk_store.pending_in_chunk, self.sessions,
                                               chunk)
            chunk_tasks: list[asyncio.Task] = []
            for start in range(0, len(pending), 100):
                if self.halt:
                    break
                batch = await self.breaker.store(
                    dataset_service.get_responses, self.sessions, pending[start:start + 100])
                for response in batch:
                    if not await self._wait_halt_or(self.window.acquire()) or self.halt:
                        break
                    if chunk in self.lost_chunks or not await self._admit():
                        self.window.release()
                        break
                    task = asyncio.create_task(self._grade_one(response))
                    chunk_tasks.append(task)
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
            finisher = asyncio.create_task(self._finish_chunk(chunk, chunk_tasks))
            tasks.add(finisher)
            finisher.add_done_callback(tasks.discard)

    async def _run_passes(self, tasks: set[asyncio.Task]) -> None:
        if not self.helper:
            # Resumed after a provider pause: the grades that failed while it was down too.
            await self.breaker.store(
                partial(chunk_store.plan_pending, with_transient=self.provider_breaker.probing),
                self.sessions, self.run.id, 1)
        pass_no = 1
        while not self.halt:
            self.passes = self.calls.attempt = pass_no
            await self._work_chunks(tasks)
            while not self.halt and tasks:
                await self._wait_halt_or(asyncio.wait(set(tasks)))
            if self.helper or self.halt:
                return
            # Chunks other workers hold: wait for them (or take them over when they stop).
            # Looked at soon, then less often: a helper's last small chunk ends within a
            # fraction of a second, and the run's end (and the command's) waits for the look.
            pause = FIRST_LOOK
            while not self.halt and await self.breaker.store(chunk_store.unfinished,
                                                             self.sessions, self.run.id):
                await self._work_chunks(tasks)
                if tasks:
                    await self._wait_halt_or(asyncio.wait(set(tasks)))
                    pause = FIRST_LOOK
                else:
                    await self._wait_halt_or(asyncio.sleep(pause))
                    pause = min(LOOK_GROWTH * pause, 1.0, self.heartbeat_interval)
            if self.halt or pass_no > self.options.retry_passes:
                return
            retry = await self.breaker.store(passes.transient_response_ids, self.sessions,
                                             self.run.id)
            if not retry:
                return
            delay = self.options.pass_delay * 2 ** (pass_no - 1)
            log.info("run %s: %s grades failed transiently; pass %s in %.0f s", self.run.id,
                     len(retry), pass_no + 1, delay)
            self.calls.attempt = pass_no + 1
            next_try = datetime.now(UTC) + timedelta(seconds=delay)
            self._set_notice(self.calls.outage_notice(next_try) or (
                f"{len(retry)} grades failed transiently (HTTP 429, 5xx, timeouts); retry "
                f"pass {pass_no + 1} of {1 + self.options.retry_passes} at "
                f"{next_try:%H:%M:%S} UTC"))
            with contextlib.suppress(Exception):  # said at the next heartbeat otherwise
                await self._show_notice()
            if not await self._wait_halt_or(asyncio.sleep(delay)):
                return
            pass_no += 1
            self._set_notice(self.calls.outage_notice())  # no "at ..." once it runs
            await self.breaker.store(chunk_store.plan_pass, self.sessions, self.run.id, pass_no,
                                     retry)

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

    async def _store_the_rest(self) -> None:
        """Grades made but not stored yet are stored before the run lets go of its chunks
        (they were paid for); a database that stays away leaves those responses pending."""
        try:
            await asyncio.wait_for(self.writer.close(), FINAL_STORE_SECONDS)
        except TimeoutError:
            self._unstored_left(self.writer.pending)
        except Exception as exc:  # kept in memory no longer: pending for a requeue
            log.exception("could not store the last grades of run %s", self.run.id)
            self._unstored_left(self.writer.pending, describe_db_error(exc))

    def _unstored_left(self, count: int, why: str | None = None) -> None:
        self.unstored += count
        self.unstored_error = self.unstored_error or why or self.breaker.fault or \
            "the database did not take them in time"

    async def _conclude(self) -> RunResult:
        if self.halt == "fatal":
            assert self.fatal is not None
            return await self._finish_failed(str(self.fatal))
        if self.helper:
            return self._result(self.halt or "running", self.provider_breaker.reason)
        if self.halt == "paused":
            assert self.provider_breaker.reason is not None
            return await self._finish_failed(self.provider_breaker.reason)
        if self.halt == "capped":
            assert self.capped is not None
            return await self._finish_failed(self.capped)
        if self.halt == "stopped":
            await asyncio.to_thread(queue.release, self.sessions, self.run.id, self.worker_id)
            return self._result("queued")
        if self.halt in ("cancelled", "lost"):
            return self._result(self.halt)
        if self.unstored:
            return await self._finish_failed(
                f"{self.unstored} grades could not be stored ({self.unstored_error}); requeue "
                "the run to grade those responses again")
        try:
            info = await asyncio.to_thread(retry_db, run_service.finish_run, self.sessions,
                                           self.run.id)
        except InvalidStateError:  # cancelled in the last moment
            info = await asyncio.to_thread(run_service.get_run, self.sessions, self.run.id)
        return self._result(info.status)

    async def _finish_failed(self, error: str) -> RunResult:
        with contextlib.suppress(InvalidStateError):
            await asyncio.to_thread(run_service.fail_run, self.sessions, self.run.id, error)
        return self._result("failed", error)

    def _result(self, status: str, error: str | None = None) -> RunResult:
        return RunResult(
            run_id=self.run.id, status=status, graded=self.graded, failed=self.failed,
            provider_calls=self.totals.provider_calls, cache_hits=self.totals.cache_hits,
            rate_limited=self.totals.rate_limited, error=error, passes=self.passes,
        )


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
