"""When results cannot be stored, stop paying for answers (a circuit breaker).

A grade that cannot be written (disk full, database restarting, a lock held past the busy
timeout, a read-only file) is kept in memory and its store retried with a growing pause; while
any store is failing the breaker is open and the runner makes no new provider calls. Answers
already paid for are never asked again: they wait in memory until the database takes them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from storage.db_errors import describe_db_error, is_storage_fault

log = logging.getLogger(__name__)
T = TypeVar("T")


class StoreBreaker:
    def __init__(self, *, on_change: Callable[[str | None], None] = lambda _: None,
                 first_pause: float = 1.0, max_pause: float = 15.0):
        self._closed = asyncio.Event()
        self._closed.set()
        self._on_change = on_change
        self.first_pause = first_pause
        self.max_pause = max_pause
        self.fault: str | None = None
        self.pauses = 0  # how many times the breaker opened

    @property
    def open(self) -> bool:
        return not self._closed.is_set()

    async def wait_closed(self) -> None:
        """Return once stores work (at once when they do): gate provider calls on it."""
        await self._closed.wait()

    async def store(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a thread, retried until the database takes it."""
        pause = self.first_pause
        while True:
            try:
                result = await asyncio.to_thread(fn, *args)
            except Exception as exc:
                if not is_storage_fault(exc):
                    raise
                self._trip(describe_db_error(exc))
                await asyncio.sleep(pause)
                pause = min(self.max_pause, pause * 2)
                continue
            self._reset()
            return result

    def _trip(self, fault: str) -> None:
        if self.open:
            return
        self.fault = fault
        self.pauses += 1
        self._closed.clear()
        message = (f"paused: results cannot be stored ({fault}). No provider calls are made "
                   "meanwhile; answers already received are kept and stored when the "
                   "database works again (free disk space / restart the database server); "
                   "the run then resumes by itself.")
        log.warning("%s", message)
        self._on_change(message)

    def _reset(self) -> None:
        if not self.open:
            return
        log.warning("resumed: results are stored again (the pause was: %s)", self.fault)
        self.fault = None
        self._closed.set()
        self._on_change(None)
