"""Adaptive concurrency per provider endpoint, shared by everything in the process.

``limiter_for(model, api_base, ceiling)`` is the one limiter of an endpoint (provider, model,
api_base): the default graders and the job runner both take their slots from it, so a user
gathering many ``rubric.grade(...)`` calls gets the same capacity discovery as the runner.
The rules are in ``grading.capacity`` (TCP-style slow start and AIMD with a remembered
refusal level, plus a Gradient2-style delay signal); this module adds the waiting.

State is guarded by a threading lock and waiters are woken on their own event loop, so one
limiter serves several loops (the app's worker thread, ``grade_sync``, a CLI run).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grading import capacity_memory
from grading.capacity import Call, CapacityEstimate, CapacitySnapshot
from grading.errors import TransientProviderError

CPU_WINDOW = 1.0  # seconds over which the process's own CPU use is measured
CPU_BUSY = 0.85  # of one core: busy enough that latency rises in our own event loop
REMEMBER_INTERVAL = 5.0  # seconds between writes of an endpoint's limit (``capacity_memory``)


def busy_seconds() -> float:
    """CPU seconds this process used, plus the seconds the calling thread (an event loop's)
    waited for a core (Linux schedstat; 0 elsewhere): on a machine shared with other
    processes a starved loop queues answers as much as a busy one does."""
    used = time.process_time()
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as stats:
            return used + int(stats.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return used


@dataclass(frozen=True)
class LimiterStats:
    ceiling: int | None
    limit: float
    in_flight: int
    lowest_limit: float
    decreases: int
    throttled: int


class AdaptiveLimiter:
    """``async with limiter.slot() as slot: ...``; a 429 raised inside the block is noticed
    (or say so with ``slot.throttled(retry_after)``)."""

    def __init__(self, ceiling: int | None = None, *, clock: Callable[[], float] = time.monotonic,
                 initial: int | None = None, cpu_clock: Callable[[], float] | None = None,
                 memory_key: tuple[str, str, str] | None = None):
        """``cpu_clock``: seconds the process used (or, per thread, waited for) the CPU
        (``busy_seconds``), read with ``clock`` every ``CPU_WINDOW`` by each thread that
        ends calls, to tell the estimate when the process is busy. ``memory_key``: the
        endpoint, whose limit is kept between processes (``capacity_memory``): this one
        starts from what the last one held, unless another is live on it."""
        if ceiling is not None and ceiling < 1:
            raise ValueError(f"concurrency must be >= 1, got {ceiling}")
        self._clock = clock
        self._lock = threading.Lock()
        self.estimate = (CapacityEstimate(ceiling) if initial is None
                         else CapacityEstimate(ceiling, initial=initial))
        self._waiters: deque[_Waiter] = deque()
        # Waiters woken and not yet running: their slots are spoken for. Without this count,
        # every call that ended before they ran woke as many again (measured: seven wake-ups
        # per call started, with 1,600 calls gathered at once).
        self._woken = 0
        self._elsewhere = 0  # calls waiting for the endpoint's first answer (``waiting_elsewhere``)
        self._cpu_clock = cpu_clock
        self.estimate.cpu_watched = cpu_clock is not None  # no queue seen before it is read
        self._cpu_marks: dict[int, tuple[float, float]] = {}  # per thread: (clock, cpu)
        self.memory_key = memory_key
        # What the last process held, and whether it was refused just above (``capacity_memory``)
        self.recalled = capacity_memory.claim(memory_key) if memory_key is not None else None
        if self.recalled is not None:
            self.estimate.resume(*self.recalled)
        self._remembered_at = -math.inf

    # -- configuration and reading -----------------------------------------------------
    def set_ceiling(self, ceiling: int | None) -> None:
        """A user's cap (None: discover with no cap)."""
        with self._lock:
            self.estimate.set_ceiling(ceiling)
            self._wake_locked()

    @property
    def limit(self) -> int:
        return self.estimate.slots

    @property
    def clock(self) -> Callable[[], float]:
        return self._clock

    def stats(self) -> LimiterStats:
        with self._lock:
            e = self.estimate
            return LimiterStats(ceiling=e.ceiling, limit=e.limit, in_flight=e.in_flight,
                                lowest_limit=e.lowest_limit, decreases=e.decreases,
                                throttled=e.refusals)

    def snapshot(self) -> CapacitySnapshot:
        with self._lock:
            return self.estimate.snapshot()

    def update(self, change: Callable[[CapacityEstimate, float], Any]) -> Any:
        """Apply ``change(estimate, now)`` under the lock (sharing between processes)."""
        with self._lock:
            result = change(self.estimate, self._clock())
            self._wake_locked()
            return result

    # -- acquiring -----------------------------------------------------------------------
    def slot(self) -> Slot:
        return Slot(self)

    async def acquire(self) -> Call:
        """Wait for a free slot; returns the call (for ``release``). Waiters are served in
        order: one woken for a slot that was gone when it ran (the limit fell meanwhile)
        keeps its place at the front."""
        loop = asyncio.get_running_loop()
        waiter: _Waiter | None = None
        while True:
            with self._lock:
                if waiter is not None and waiter.woken:
                    self._woken -= 1
                    waiter.woken = False
                now = self._clock()
                if now < self.estimate.paused_until:
                    pause = self.estimate.paused_until - now
                    waiter = None
                elif self.estimate.can_start(now):
                    return self.estimate.start(now)
                else:
                    pause = None
                    first = waiter is not None
                    waiter = _Waiter(loop, loop.create_future())
                    if first:
                        self._waiters.appendleft(waiter)
                    else:
                        self._waiters.append(waiter)
                    # Before the first answer, the work queued here widens the opening.
                    before = self.estimate.slots
                    self._expect_locked(before)
            if waiter is None:
                await asyncio.sleep(pause)
                continue
            try:
                await waiter.future
            except asyncio.CancelledError:
                with self._lock:
                    if waiter.woken:  # woken for a slot it will not take: hand it on
                        self._woken -= 1
                        waiter.woken = False
                        self._wake_locked()
                    else:
                        with contextlib.suppress(ValueError):  # skipped by a wake-up
                            self._waiters.remove(waiter)
                raise

    def waiting_elsewhere(self, change: int) -> None:
        """``change`` calls start (+1) or stop (-1) waiting before taking a slot, for the
        endpoint's first answer (``LiteLLMGenerate.first_answer``): work waiting, as the
        calls queued here are, before the first answer widens the opening."""
        with self._lock:
            self._elsewhere = max(0, self._elsewhere + change)
            self._expect_locked(self.estimate.slots)

    def _expect_locked(self, slots_before: int) -> None:
        """Before the first answer, the work waiting widens the opening."""
        self.estimate.expect(len(self._waiters) + self.estimate.in_flight + self._elsewhere)
        if self.estimate.slots > slots_before:
            self._wake_locked()

    def release(self, call: Call, *, throttled: bool = False,
                retry_after: float | None = None, failed: bool = False,
                timed_out: bool = False) -> None:
        """End a call. ``failed``: it failed otherwise (5xx, lost connection): no lesson
        learned; ``timed_out``: no answer in time (``CapacityEstimate.timed_out``)."""
        with self._lock:
            now = self._clock()
            self.estimate.waiting = len(self._waiters) + self._woken
            if throttled:
                self.estimate.refused(call, now, retry_after)
            elif timed_out:
                self.estimate.timed_out(call, now)
            elif failed:
                self.estimate.failed(call, now)
            else:
                self.estimate.succeeded(call, now)
            self._measure_cpu_locked(now)
            self._wake_locked()
            remember = (self.memory_key is not None
                        and now - self._remembered_at >= REMEMBER_INTERVAL)
            if remember:
                self._remembered_at = now
        if remember:
            self.remember(wait=False)  # on the event loop: never wait for the file's lock

    def remember(self, *, wait: bool = True) -> None:
        """Keep this endpoint's limit for the next process (``capacity_memory``): the limit
        held, or, when nothing here was refused or cut, at least what was recalled (a short
        run that never needed the old level does not make the next one start lower).
        ``wait=False``: skipped when another process holds the memory file's lock."""
        with self._lock:
            e = self.estimate
            if self.memory_key is None or e.samples == 0:
                return
            if e.decreases or e.refusals:
                limit = e.limit
                capped = e.refused_at is not None and e.refused_at <= e.limit + 2
            else:
                limit, capped = max((e.limit, False), self.recalled or (0.0, False))
            key = self.memory_key
        capacity_memory.remember(key, limit, capped, wait=wait)

    def _measure_cpu_locked(self, now: float) -> None:
        if self._cpu_clock is None:
            return
        thread = threading.get_ident()
        mark = self._cpu_marks.get(thread)
        if mark is not None and now - mark[0] < CPU_WINDOW:
            return
        cpu = self._cpu_clock()
        if mark is None and len(self._cpu_marks) >= 64:
            self._cpu_marks.clear()  # threads come and go (an app runs for months)
        self._cpu_marks[thread] = (now, cpu)
        if mark is not None:
            self.estimate.own_cpu((cpu - mark[1]) / (now - mark[0]) >= CPU_BUSY)

    def _wake_locked(self) -> None:
        free = self.estimate.slots - self.estimate.in_flight - self._woken
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if waiter.future.done():  # cancelled: its task removes nothing, counts nothing
                continue
            waiter.woken = True
            self._woken += 1
            if waiter.loop is _running_loop():
                waiter.future.set_result(None)  # same loop: no self-pipe write needed
            else:
                waiter.loop.call_soon_threadsafe(_resolve, waiter.future)
            free -= 1


@dataclass(eq=False)
class _Waiter:
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    woken: bool = False


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def refusal_of(exc: BaseException | None) -> tuple[bool, float | None]:
    """Whether ``exc`` is a 429, and the Retry-After it carries."""
    if exc is None:
        return False, None
    status = getattr(exc, "status_code", None)
    if status != 429:
        return False, None
    retry_after = exc.retry_after if isinstance(exc, TransientProviderError) else None
    return True, retry_after


class Slot:
    def __init__(self, limiter: AdaptiveLimiter):
        self._limiter = limiter
        self._call: Call | None = None
        self._throttled = False
        self._retry_after: float | None = None

    def throttled(self, retry_after: float | None) -> None:
        self._throttled, self._retry_after = True, retry_after

    async def __aenter__(self) -> Slot:
        self._call = await self._limiter.acquire()
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        refused, retry_after = refusal_of(exc)
        if refused and not self._throttled:
            self.throttled(retry_after)
        assert self._call is not None
        timed_out = (not self._throttled and isinstance(exc, TransientProviderError)
                     and exc.status_code == 408)
        self._limiter.release(self._call, throttled=self._throttled,
                              retry_after=self._retry_after, timed_out=timed_out,
                              failed=exc is not None and not self._throttled)


_registry: dict[tuple[str, str, str], AdaptiveLimiter] = {}
_registry_lock = threading.Lock()
_part = 1.0  # this process's part of every user ceiling (``share_ceilings``)


def share_ceilings(part: float) -> None:
    """This process is one of several that split the same work (``grade --workers N``: 1/N
    each): every endpoint's user ceiling, now and later, allows it only ``part`` of it, so
    that together they keep at most the ceiling in flight."""
    global _part
    with _registry_lock:
        _part = part
        limiters = list(_registry.values())
    for limiter in limiters:
        limiter.update(lambda estimate, _now: estimate.set_part(part))


@atexit.register
def _remember_all() -> None:
    """At exit, every endpoint's limit for the next process."""
    with _registry_lock:
        limiters = list(_registry.values())
    for limiter in limiters:
        limiter.remember()


def limiter_key(model: str, api_base: str | None) -> tuple[str, str, str]:
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    return provider, model, (api_base or "").rstrip("/")


_KEEP: Any = object()


def limiter_for(model: str, api_base: str | None, ceiling: int | None = _KEEP
                ) -> AdaptiveLimiter:
    """The process-wide limiter of this endpoint; ``ceiling`` given: capped at it (None: no
    cap, discover), else the cap stays as it is."""
    key = limiter_key(model, api_base)
    with _registry_lock:
        limiter = _registry.get(key)
        if limiter is None:
            limiter = _registry[key] = AdaptiveLimiter(None if ceiling is _KEEP else ceiling,
                                                       cpu_clock=busy_seconds, memory_key=key)
            if _part != 1.0:
                limiter.update(lambda estimate, _now: estimate.set_part(_part))
            return limiter
    if ceiling is not _KEEP and ceiling != limiter.estimate.ceiling:
        limiter.set_ceiling(ceiling)
    return limiter
