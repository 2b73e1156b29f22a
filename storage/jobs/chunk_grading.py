"""Grading a run chunk by chunk: claiming chunks, grading their responses, storing the
outcomes, and the later passes for grades that failed transiently."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import UTC, datetime, timedelta
from functools import partial

from grading.redact import redact
from grading.types import EvaluationReport
from storage.db_errors import describe_db_error
from storage.dto import GradeInfo, ResponseInfo
from storage.errors import RunCancelledError
from storage.jobs import chunks as chunk_store
from storage.jobs import passes
from storage.services import datasets as dataset_service
from storage.services.grade_records import NewGrade, priced_cost

log = logging.getLogger(__name__)

# The owner's first look, once its own grades are done, at chunks other workers still hold;
# each look after waits half as long again, up to a second. The run (and the command) ends
# up to one pause after the last chunk does: a look is one small query, and the pauses
# doubling from 0.05 s held ``grade --workers 2`` 0.06-0.07 s past the helper's last call
# (traced).
FIRST_LOOK = 0.02
LOOK_GROWTH = 1.5


class ChunkGradingMixin:
    """The grading part of ``RunExecution`` (``storage.jobs.runner``)."""

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
