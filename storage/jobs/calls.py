"""The job runner's provider calls: the cache, then the endpoint's limiter, then litellm;
and which provider errors mean that no call of a run can work."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from grading.errors import FatalProviderError, ProviderError, TransientProviderError
from grading.llm import BUSY_WORDS, LiteLLMGenerate, credential_problem
from grading.samples import current_sample
from grading.types import GenerateResult, TokenUsage
from storage.db_errors import describe_db_error, is_storage_fault
from storage.engine import SessionFactory
from storage.jobs import cache as cache_store
from storage.jobs.limiter import AdaptiveLimiter
from storage.jobs.notices import unreachable
from storage.jobs.provider_breaker import ProviderBreaker

log = logging.getLogger(__name__)

_FATAL_STATUS = frozenset({401, 403, 404})
# Answers reach the cache within this many seconds of arriving (a kill loses at most that).
CACHE_FLUSH_SECONDS = 0.5
# How long a cache lookup waits for a database that went away before asking the provider.
CACHE_READ_PATIENCE = 60.0


@dataclass
class Counters:
    """Job counters not yet written to ``run_job_stats`` (flushed with each heartbeat)."""

    provider_calls: int = 0
    cache_hits: int = 0
    rate_limited: int = 0

    def take(self) -> dict[str, int]:
        taken = {"provider_calls": self.provider_calls, "cache_hits": self.cache_hits,
                 "rate_limited": self.rate_limited}
        self.provider_calls = self.cache_hits = self.rate_limited = 0
        return taken


def is_fatal_for_run(exc: BaseException) -> bool:
    """A provider error no other call would escape: bad or missing key, no access, no model.

    ``grading.llm`` raises credential errors without a cause (the cause could echo the key)
    and every other ProviderError from the HTTP error that caused it.
    """
    if not isinstance(exc, ProviderError):
        return False
    if isinstance(exc, FatalProviderError):
        return True
    cause = exc.__cause__
    if cause is None:
        return True
    return getattr(cause, "status_code", None) in _FATAL_STATUS


def outage_reason(exc: TransientProviderError) -> str:
    """A few words on why a call failed transiently (the notice's parenthesis)."""
    text = str(exc).lower()
    if BUSY_WORDS in text:  # grading.llm's probe: the server runs calls we gave up on
        return "still finishing calls given up on"
    if exc.status_code == 408 or "did not answer" in text:
        return "no answer in time"
    if "connection" in text or exc.status_code is None:
        return "connection failed"
    return f"HTTP {exc.status_code}"


def missing_credentials(model: str, api_base: str | None) -> str | None:
    """Why no call can work, before trying one; None when it may (``credential_problem``
    decides, as for the library, the Grade page and the connection test)."""
    problem = credential_problem(model, api_base)
    if problem is None:
        return None
    return problem.rstrip(".") + ", in the environment of the worker; then requeue the run."


class JobGenerate:
    """The runner's ``generate_fn``: the cache, then the endpoint's limiter, then litellm."""

    def __init__(
        self, llm: LiteLLMGenerate, *, limiter: AdaptiveLimiter, sessions: SessionFactory,
        use_cache: bool, counters: Counters, cache_buffer: cache_store.WriteBuffer,
        on_fatal: Callable[[BaseException], None],
        gate: Callable[[], Awaitable[None]] | None = None,
        on_notice: Callable[[str | None], None] | None = None,
        breaker: ProviderBreaker | None = None,
    ):
        self.llm = llm
        self.limiter = limiter
        self.sessions = sessions
        self.use_cache = use_cache
        self.counters = counters
        self.cache_buffer = cache_buffer
        self.on_fatal = on_fatal
        self._key = cache_store.KeyMaker({
            "temperature": llm.temperature, "structured_output": llm.structured_output,
            **llm.extra})
        # Keys already asked in this run -> whether their answer was kept (usable, cached).
        # Asking again for an answer that was not kept is a parse retry: the provider is asked
        # afresh. One that was kept is asked again by a retry pass of a grade that failed on
        # another criterion or sample: it replays from the cache (never paid twice).
        self._answered: dict[str, bool] = {}
        self._flushing: asyncio.Task[Any] | None = None
        self._flush_lock = asyncio.Lock()
        self._reader = cache_store.BatchedReader(sessions)
        self.gate = gate
        self.breaker = breaker
        self.on_notice = on_notice or (lambda _: None)
        self._waiting_until = 0.0
        self._flush_failed_at = 0.0
        # A provider that does not answer (5xx, timeouts, lost connections, each after its
        # transport retries): since when, how many calls failed since, and why the last did.
        self.down_since: datetime | None = None
        self.down_calls = 0
        self.down_why = ""
        self.attempt, self.attempts = 1, 1  # the run's pass, of how many at most

    async def __call__(
        self, system_prompt: str, user_prompt: str, *,
        response_format: dict[str, Any] | None = None,
    ) -> GenerateResult:
        model = self.llm.model
        messages = [{"role": "system", "content": system_prompt},
                    {"role": "user", "content": user_prompt}]
        key = cache_store.sample_key(
            self._key(model, messages, response_format if self.llm.structured_output else None),
            current_sample())
        kept = self._answered.get(key)
        if self.use_cache and kept is not False:
            self._answered[key] = bool(kept)
            hit = self.cache_buffer.get(key) if kept else None
            if hit is None:
                hit = await self._cached(key)
            if hit is not None:
                self.counters.cache_hits += 1
                return GenerateResult(text=hit.text, usage=TokenUsage(), cost=0.0)
        if self.gate is not None:  # no new paid calls while results cannot be stored
            await self.gate()
        probe = False
        if self.breaker is not None:  # nor while the provider keeps failing
            probe = await self.breaker.before_call()
        sent = False
        try:
            # The endpoint's first answer is waited for before the slot (``first_answer``):
            # a slot's level and clock start when its request goes.
            async with (self.llm.first_answer(response_format,
                                              waiting=self.limiter.waiting_elsewhere),
                        self.limiter.slot() as slot):
                if self.breaker is not None:  # it may have opened while this call waited
                    await self.breaker.still_closed()
                self.counters.provider_calls += 1
                sent = True
                try:
                    result = await self.llm(system_prompt, user_prompt,
                                            response_format=response_format)
                except TransientProviderError as exc:
                    if exc.status_code == 429:
                        self.counters.rate_limited += 1
                        slot.throttled(exc.retry_after)
                        self._show_wait(exc.retry_after)
                    else:
                        self._show_down(exc)
                    self._breaker_failed(exc)
                    raise
                except ProviderError as exc:
                    if is_fatal_for_run(exc):
                        self.on_fatal(exc)
                    self._breaker_failed(exc)
                    raise
                except asyncio.CancelledError:  # the call deadline, or the run stopping
                    if self.breaker is not None:
                        self.breaker.cancelled()
                    raise
                except Exception as exc:
                    self._breaker_failed(exc)  # not a breaker kind: a probe ends
                    raise
        finally:
            if probe and not sent and self.breaker is not None:
                self.breaker.abandon_probe()  # cut off before it went out: another probes
        if self.breaker is not None:
            self.breaker.answered()
        self._answered.setdefault(key, False)
        if self.down_since is not None:  # it answers again
            self.down_since, self.down_calls = None, 0
            self.on_notice(None)
        if self._waiting_until and time.monotonic() >= self._waiting_until:
            self._waiting_until = 0.0
            self.on_notice(None)
        if not self.use_cache:
            return result
        usage = result.usage
        answer = cache_store.CachedAnswer(
            text=result.text,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            cost=result.cost,
        )
        # Cached only once the grader could use it: an unusable answer is never kept.
        return result.model_copy(update={"accept": lambda: self._keep(key, model, answer)})

    def _breaker_failed(self, exc: BaseException) -> None:
        if self.breaker is not None:
            self.breaker.failed(exc)

    async def _cached(self, key: str) -> cache_store.CachedAnswer | None:
        """The cached answer; a database that is briefly away (a restart) is waited for, one
        that stays away counts as a miss (the cache only saves money)."""
        pause, deadline = 0.25, time.monotonic() + CACHE_READ_PATIENCE
        while True:
            try:
                return await self._reader.get(key)
            except Exception as exc:
                if not is_storage_fault(exc):
                    raise
                if time.monotonic() > deadline:
                    return None
            await asyncio.sleep(pause)
            pause = min(5.0, pause * 2)

    def _show_wait(self, retry_after: float | None) -> None:
        if not retry_after:
            return
        until = time.monotonic() + retry_after
        if until <= self._waiting_until:
            return
        self._waiting_until = until
        clock = (datetime.now(UTC) + timedelta(seconds=retry_after)).strftime("%H:%M:%S")
        self.on_notice(f"the provider asked to wait {retry_after:.0f} s (HTTP 429); calls "
                       f"resume at {clock} UTC")

    def _show_down(self, exc: TransientProviderError) -> None:
        """Say on the run that the provider does not answer, since when, and how often we
        tried: a run that only counted failures looked like a slow run with an ETA."""
        if self.down_since is None:
            self.down_since = datetime.now(UTC)
        self.down_calls += 1
        self.down_why = outage_reason(exc)
        self.on_notice(self.outage_notice())

    def outage_notice(self, next_try: datetime | None = None) -> str | None:
        if self.down_since is None:
            return None
        return unreachable(self.down_since, self.down_why, self.down_calls, self.attempt,
                           self.attempts, next_try)

    def _keep(self, key: str, model: str, answer: cache_store.CachedAnswer) -> None:
        self._answered[key] = True
        self.cache_buffer.add(key, model, answer)
        if self._flushing is None:
            self._flushing = asyncio.get_running_loop().create_task(self._flush_soon())

    async def _flush_soon(self) -> None:
        """Flush by time as well as by count: a killed process loses under a second of
        answers, not a whole batch."""
        try:
            while self.cache_buffer.pending:
                await asyncio.sleep(CACHE_FLUSH_SECONDS)
                await self._flush()
        finally:
            self._flushing = None

    async def flush_cache(self) -> None:
        """Write the answers kept so far, and wait for a write under way (the grade writer
        calls it before storing grades, so a grade is never stored ahead of its answers)."""
        if self.cache_buffer.pending or self._flush_lock.locked():
            await self._flush()

    async def _flush(self) -> None:
        async with self._flush_lock:
            if self.cache_buffer.pending:
                await self._write_kept()

    async def _write_kept(self) -> None:
        try:
            await asyncio.to_thread(self.cache_buffer.flush)
        except Exception as exc:  # kept in the buffer for the next flush; said once a minute
            if time.monotonic() - self._flush_failed_at > 60:
                self._flush_failed_at = time.monotonic()
                log.warning("could not store %s answers in the cache yet (%s); kept in memory",
                            self.cache_buffer.pending, describe_db_error(exc))

    async def close(self) -> None:
        if self._flushing is not None:
            self._flushing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flushing
        await self._flush()
