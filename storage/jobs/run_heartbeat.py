"""What keeps a run's claim alive while it grades: heartbeats that renew its lease and chunks
and store its counters, capacity sharing, and the watchers for a cancel or a stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from storage.db_errors import describe_db_error
from storage.jobs import chunks as chunk_store
from storage.jobs import queue
from storage.jobs.limiter import SYNC_INTERVAL
from storage.services import runs as run_service

log = logging.getLogger(__name__)

# How often a run looks whether it was cancelled (one primary-key read): a cancel stops new
# provider calls within this, not at the next heartbeat. Grades in flight then are not
# stored (``record_grades`` refuses them once the cancel is committed); their answers are
# in the cache, so a requeue does not pay for them again.
CANCEL_LOOK_SECONDS = 0.25


class HeartbeatMixin:
    """The heartbeat part of ``RunExecution`` (``storage.jobs.runner``)."""

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
