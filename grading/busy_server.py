"""Calls we gave up on that the server is still running.

A local server (llama.cpp's ``llama-server``, llama-cpp-python's) cannot cancel a
generation when its client stops waiting: it runs to the end of the answer, and whatever is
sent meanwhile queues behind it. A retry sent at once after a timeout waits for the abandoned
answer and its own, tends to time out too and adds one more abandoned call to the queue
(seen: 440 requests for 2 responses). So after a call to an endpoint timed out on our side,
the next call to that endpoint first makes sure the server is free: one tiny request (one
token, no schema) that queues behind whatever the server still runs, with a timeout long
enough for the abandoned answers to end (``probe_timeout``: their answer caps at the speed
the endpoint answered at, plus one ordinary timeout). When it answers, the server is free
and the call goes; when it does not, the attempt fails as a transient failure and the retry
loop's budget and deadline bound the rest. One probe at a time per endpoint and event loop:
every call waiting for it goes once it answered.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

MAX_PROBE_WAIT = 900.0  # seconds: no probe waits longer for a server, whatever it has queued
SPEED_SAMPLES = 16  # recent answers whose speed is remembered
MIN_SPEED_TOKENS = 16  # shorter answers say more about the prompt's time than the speed


@dataclass
class _Endpoint:
    abandoned: list[float] = field(default_factory=list)  # per call: seconds it may still run
    speeds: deque[float] = field(default_factory=lambda: deque(maxlen=SPEED_SAMPLES))
    since: float | None = None  # when the oldest abandoned call was given up on


class BusyServers:
    """Per (model, api_base): the calls we gave up on, and how fast the server answers."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._endpoints: dict[tuple[str, str | None], _Endpoint] = {}
        # Per event loop (an asyncio.Lock belongs to one), forgotten with the loop: keyed by
        # id() instead, a new loop given a dead one's address would get its lock and fail.
        self._probes: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[str, str | None], asyncio.Lock]
        ] = weakref.WeakKeyDictionary()

    def _get(self, model: str, api_base: str | None) -> _Endpoint:
        return self._endpoints.setdefault((model, api_base), _Endpoint())

    def answered(self, model: str, api_base: str | None, tokens: int, seconds: float) -> None:
        """An answer of ``tokens`` came in ``seconds`` (the speed bounds later waits)."""
        if tokens < MIN_SPEED_TOKENS or seconds <= 0:
            return
        with self._lock:
            self._get(model, api_base).speeds.append(tokens / seconds)

    def gave_up(self, model: str, api_base: str | None, *, cap_tokens: int | None,
                waited: float) -> None:
        """We stopped waiting for a call after ``waited`` s; the server may run it on for as
        long as its whole answer (``cap_tokens``) takes at the slowest speed seen (unknown
        speed or cap: as long again as we waited)."""
        with self._lock:
            endpoint = self._get(model, api_base)
            speed = min(endpoint.speeds) if endpoint.speeds else None
            more = cap_tokens / speed if cap_tokens and speed else waited
            endpoint.abandoned.append(min(MAX_PROBE_WAIT, more))
            if endpoint.since is None:
                endpoint.since = self._clock()

    def busy(self, model: str, api_base: str | None) -> int:
        """How many calls we gave up on the server may still be running."""
        with self._lock:
            endpoint = self._endpoints.get((model, api_base))
            return len(endpoint.abandoned) if endpoint else 0

    def probe_timeout(self, model: str, api_base: str | None, timeout: float) -> float:
        """How long a probe may wait: the abandoned answers' time (the server runs them one
        after another at worst), less what has passed since the first, plus ``timeout``."""
        with self._lock:
            endpoint = self._endpoints.get((model, api_base))
            if endpoint is None or not endpoint.abandoned:
                return timeout
            passed = self._clock() - (endpoint.since or self._clock())
            left = max(0.0, sum(endpoint.abandoned) - passed)
            return min(MAX_PROBE_WAIT, left + timeout)

    def free(self, model: str, api_base: str | None) -> None:
        """The server answered a probe: what we gave up on before has ended."""
        with self._lock:
            endpoint = self._endpoints.get((model, api_base))
            if endpoint is not None:
                endpoint.abandoned.clear()
                endpoint.since = None

    def probing(self, model: str, api_base: str | None) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        with self._lock:
            return self._probes.setdefault(loop, {}).setdefault((model, api_base),
                                                                asyncio.Lock())

    async def wait_free(self, model: str, api_base: str | None,
                        probe: Callable[[], Awaitable[Any]]) -> None:
        """Return at once when no call to the endpoint was given up on; else once ``probe()``
        (one tiny request) was answered, by this caller or one it waited for. ``probe``'s
        errors propagate (the caller's retry loop handles them)."""
        if not self.busy(model, api_base):
            return
        async with self.probing(model, api_base):
            if not self.busy(model, api_base):  # another call's probe was answered
                return
            await probe()
            self.free(model, api_base)

    def clear(self) -> None:
        with self._lock:
            self._endpoints.clear()
            self._probes.clear()


busy_servers = BusyServers()
