"""The runner's grades, stored a few at a time: one transaction per batch, not per response.

A grade waits in memory at most ``FLUSH_SECONDS`` (or until ``BATCH`` are waiting); the
runner flushes before it marks a chunk done, before a retry pass and when it stops, so no
chunk is done while its grades are only in memory. A kill loses at most that much work, and
the answers behind it are in the provider cache already: each batch first calls
``before_store`` (the runner's cache flush), so no grade is stored ahead of the answers it
was made from (unless the database refused the cache write: those answers stay in memory
for the next flush, and the log says so). Writes go through the store
breaker (``storage.jobs.breaker``): a database that cannot take them pauses the run's calls.
A batch the database refuses (another worker stored one of its responses first, a report
that does not match) is stored grade by grade, so only the grade at fault is left out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from storage.db_errors import describe_db_error
from storage.dto import GradeInfo
from storage.engine import SessionFactory
from storage.errors import GradeExistsError, RunCancelledError
from storage.jobs.breaker import StoreBreaker
from storage.services.grade_records import NewGrade, record_grades

log = logging.getLogger(__name__)

BATCH = 16
# A quarter of a second: a full disk trips the store breaker (and pauses new calls) within
# that, before the runner's own chunk bookkeeping meets the full disk (a second let a chunk
# claim fail the run: tests/jobs/test_faults.py).
FLUSH_SECONDS = 0.25


class GradeWriter:
    def __init__(
        self, sessions: SessionFactory, run_id: int, breaker: StoreBreaker, *,
        on_stored: Callable[[NewGrade, GradeInfo], None],
        on_unstored: Callable[[NewGrade, Exception], None],
        batch: int = BATCH, seconds: float = FLUSH_SECONDS,
        before_store: Callable[[], Awaitable[None]] | None = None,
    ):
        self.sessions = sessions
        self.run_id = run_id
        self.breaker = breaker
        self.on_stored = on_stored
        self.on_unstored = on_unstored
        self.batch = batch
        self.seconds = seconds
        self.before_store = before_store
        self._pending: list[NewGrade] = []
        self._added = 0  # grades ever added, and ever taken from _pending to be stored:
        self._taken = 0  # a flush stores up to the count added when it got the lock
        self._lock = asyncio.Lock()
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()  # our own flush: at most one
        self._closed = False

    @property
    def pending(self) -> int:
        return len(self._pending)

    def add(self, grade: NewGrade) -> None:
        """Queue a completed grade; it is stored within ``seconds``."""
        self._pending.append(grade)
        self._added += 1
        if len(self._pending) >= self.batch:
            self._start_flush()
        elif self._timer is None and not self._tasks and not self._closed:
            self._timer = asyncio.get_running_loop().call_later(self.seconds,
                                                                self._start_flush)

    def _start_flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._tasks or self._closed:
            # One flush of our own at a time: the one under way (or waiting for the lock)
            # takes what is queued when it gets the lock, and when it ends it schedules the
            # next. A flush per grade added while 16 waited made a queue of one-grade
            # transactions (traced CPU-bound at 200 x 8: 102 transactions for 200 grades,
            # the last of them stored after the last call had ended).
            return
        task = asyncio.get_running_loop().create_task(self.flush())
        self._tasks.add(task)
        task.add_done_callback(self._flushed)

    def _flushed(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.cancelled() or self._closed:
            return
        if task.exception() is not None:
            log.error("storing grades of run %s failed", self.run_id, exc_info=task.exception())
        if len(self._pending) >= self.batch:
            self._start_flush()
        elif self._pending and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.seconds,
                                                                self._start_flush)

    async def flush(self) -> None:
        """Store every grade queued before this flush got the lock (so at least those queued
        before this call; it waits for a flush under way, and the flushes that waited behind
        it then find theirs stored: a group commit).

        Grades that arrive while it stores wait for their own batch (the timer, or a full
        batch): draining them too made a chain of one-grade transactions at a steady rate.
        """
        async with self._lock:
            target = self._added
            while self._taken < target and self._pending:
                count = min(self.batch, target - self._taken)
                batch, self._pending = self._pending[:count], self._pending[count:]
                self._taken += len(batch)
                try:
                    await self._store(batch)
                except asyncio.CancelledError:
                    self._taken -= len(batch)  # put back in front by _store
                    raise

    async def close(self) -> None:
        """Flush what is left; stop the timer and wait for a flush in progress."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        await self.flush()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _store(self, batch: list[NewGrade]) -> None:
        try:
            if self.before_store is not None:
                await self.before_store()
            stored = await self.breaker.store(record_grades, self.sessions, self.run_id, batch)
        except asyncio.CancelledError:
            self._pending[:0] = batch  # not stored: a later flush may still store them
            raise
        except Exception as exc:
            if len(batch) == 1 or isinstance(exc, RunCancelledError):
                for grade in batch:  # none of them will be stored
                    self._refused(grade, exc)
                return
            for grade in batch:  # find the one at fault; the others are stored
                await self._store([grade])
            return
        for grade, info in zip(batch, stored, strict=True):
            self.on_stored(grade, info)

    def _refused(self, grade: NewGrade, exc: Exception) -> None:
        if isinstance(exc, GradeExistsError):
            return  # another worker took over this response and got here first
        if isinstance(exc, RunCancelledError):
            self.on_unstored(grade, exc)  # the run stops; nothing wrong to log
            return
        log.error("could not store the grade of response %s of run %s: %s", grade.response_id,
                  self.run_id, describe_db_error(exc), exc_info=exc)
        self.on_unstored(grade, exc)
