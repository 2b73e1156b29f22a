"""Adaptive concurrency per provider endpoint: AIMD with Retry-After.

One limiter per (provider, model, api_base), shared by every run in the process. It starts at
its configured ceiling; a 429 halves the limit (at least 1; once per round of calls, not once
per 429 of the same burst) and pauses new calls for the provider's Retry-After; each success
adds ``1/limit``, so the limit climbs back by one per round of successful calls, up to the
ceiling.

The state is guarded by a threading lock and waiters are woken on their own event loop, so
one limiter can serve several loops (the app's worker thread and a CLI run, say).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from dataclasses import dataclass

DEFAULT_CONCURRENCY = 16


@dataclass(frozen=True)
class LimiterStats:
    ceiling: int
    limit: float
    in_flight: int
    lowest_limit: float
    decreases: int
    throttled: int


class AdaptiveLimiter:
    """``async with limiter.slot() as slot: ...; slot.throttled(retry_after)`` on a 429."""

    def __init__(self, ceiling: int = DEFAULT_CONCURRENCY, *, clock=time.monotonic):
        if ceiling < 1:
            raise ValueError(f"concurrency must be >= 1, got {ceiling}")
        self._clock = clock
        self._lock = threading.Lock()
        self._ceiling = int(ceiling)
        self._limit = float(ceiling)
        self._in_flight = 0
        self._paused_until = 0.0
        self._last_decrease = -math.inf
        self._lowest = float(ceiling)
        self._decreases = 0
        self._throttled = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    # -- configuration and reading -----------------------------------------------------
    def set_ceiling(self, ceiling: int) -> None:
        """Change the configured concurrency (a run asking for another value)."""
        if ceiling < 1:
            raise ValueError(f"concurrency must be >= 1, got {ceiling}")
        with self._lock:
            self._ceiling = int(ceiling)
            self._limit = min(self._limit, float(ceiling))
            self._wake_locked()

    @property
    def limit(self) -> int:
        return max(1, int(self._limit + 1e-9))  # 3.9999... after three 1/3 steps is 4

    def stats(self) -> LimiterStats:
        with self._lock:
            return LimiterStats(
                ceiling=self._ceiling, limit=self._limit, in_flight=self._in_flight,
                lowest_limit=self._lowest, decreases=self._decreases,
                throttled=self._throttled,
            )

    # -- acquiring -----------------------------------------------------------------------
    def slot(self) -> _Slot:
        return _Slot(self)

    async def acquire(self) -> float:
        """Wait for a free slot; returns the time the call started (for ``release``)."""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                now = self._clock()
                if now < self._paused_until:
                    pause = self._paused_until - now
                    future = None
                elif self._in_flight < self.limit:
                    self._in_flight += 1
                    return now
                else:
                    pause = None
                    future = loop.create_future()
                    self._waiters.append((loop, future))
            if future is None:
                await asyncio.sleep(pause)
                continue
            try:
                await future
            except asyncio.CancelledError:
                with self._lock:
                    try:
                        self._waiters.remove((loop, future))
                    except ValueError:  # already woken: hand the wake-up on
                        self._wake_locked()
                raise

    def release(self, started: float, *, throttled: bool = False,
                retry_after: float | None = None) -> None:
        with self._lock:
            self._in_flight -= 1
            now = self._clock()
            if throttled:
                self._throttled += 1
                # Calls started before the last decrease saw the old limit: one halving per
                # round, however many of that round's calls come back 429.
                if started >= self._last_decrease:
                    self._limit = max(1.0, math.floor(self._limit / 2))
                    self._last_decrease = now
                    self._decreases += 1
                    self._lowest = min(self._lowest, self._limit)
                if retry_after:
                    self._paused_until = max(self._paused_until, now + retry_after)
            elif self._limit < self._ceiling:
                self._limit = min(float(self._ceiling), self._limit + 1.0 / self._limit)
            self._wake_locked()

    def _wake_locked(self) -> None:
        free = self.limit - self._in_flight
        while free > 0 and self._waiters:
            loop, future = self._waiters.popleft()
            if future.done():
                continue
            if loop is _running_loop():
                future.set_result(None)  # same loop: no self-pipe write needed
            else:
                loop.call_soon_threadsafe(_resolve, future)
            free -= 1


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Slot:
    def __init__(self, limiter: AdaptiveLimiter):
        self._limiter = limiter
        self._started = 0.0
        self._throttled = False
        self._retry_after: float | None = None

    def throttled(self, retry_after: float | None) -> None:
        self._throttled, self._retry_after = True, retry_after

    async def __aenter__(self) -> _Slot:
        self._started = await self._limiter.acquire()
        return self

    async def __aexit__(self, *exc_info) -> None:
        self._limiter.release(self._started, throttled=self._throttled,
                              retry_after=self._retry_after)


_registry: dict[tuple[str, str, str], AdaptiveLimiter] = {}
_registry_lock = threading.Lock()


def limiter_key(model: str, api_base: str | None) -> tuple[str, str, str]:
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    return provider, model, (api_base or "").rstrip("/")


def limiter_for(model: str, api_base: str | None, concurrency: int | None = None
                ) -> AdaptiveLimiter:
    """The process-wide limiter of this endpoint; ``concurrency`` sets its ceiling."""
    key = limiter_key(model, api_base)
    with _registry_lock:
        limiter = _registry.get(key)
        if limiter is None:
            limiter = _registry[key] = AdaptiveLimiter(concurrency or DEFAULT_CONCURRENCY)
            return limiter
    if concurrency is not None and concurrency != limiter.stats().ceiling:
        limiter.set_ceiling(concurrency)
    return limiter
