"""How a run ends: storing the grades still in hand, then finishing, failing, requeueing or
leaving the run as its halt says, and the ``RunResult`` it reports."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from storage.db_errors import describe_db_error
from storage.engine import retry_db
from storage.errors import InvalidStateError
from storage.jobs import queue
from storage.jobs.run_result import RunResult
from storage.services import runs as run_service

log = logging.getLogger(__name__)

# How long a stopping run waits for the database to take the grades it has made.
FINAL_STORE_SECONDS = 120.0


class FinishingMixin:
    """The finishing part of ``RunExecution`` (``storage.jobs.runner``)."""

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
