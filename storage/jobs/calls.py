"""The job runner's provider calls: the cache, then the endpoint's limiter, then litellm;
and which provider errors mean that no call of a run can work."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grading.errors import ProviderError, TransientProviderError
from grading.llm import API_KEY_ENV, LiteLLMGenerate, key_env_var
from grading.types import GenerateResult, TokenUsage
from storage.engine import SessionFactory
from storage.jobs import cache as cache_store
from storage.jobs.limiter import AdaptiveLimiter

log = logging.getLogger(__name__)

_FATAL_STATUS = frozenset({401, 403, 404})
# Keys whose absence means no call can work, for providers litellm needs a key for.
_KEYED_PROVIDERS = frozenset({
    "openai", "anthropic", "gemini", "azure", "openrouter", "together_ai", "mistral", "groq",
    "deepseek", "xai",
})


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
    cause = exc.__cause__
    if cause is None:
        return True
    return getattr(cause, "status_code", None) in _FATAL_STATUS


def missing_credentials(model: str, api_base: str | None) -> str | None:
    """Why no call can work, before trying one; None when a key may be there."""
    if api_base or os.environ.get(API_KEY_ENV):
        return None
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    if provider not in _KEYED_PROVIDERS:
        return None
    variable = key_env_var(model)
    if os.environ.get(variable):
        return None
    return (f"No API key was found for model '{model}': set {variable} in the environment "
            f"of the worker (or {API_KEY_ENV}), then requeue the run.")


class JobGenerate:
    """The runner's ``generate_fn``: the cache, then the endpoint's limiter, then litellm."""

    def __init__(
        self, llm: LiteLLMGenerate, *, limiter: AdaptiveLimiter, sessions: SessionFactory,
        use_cache: bool, counters: Counters, cache_buffer: cache_store.WriteBuffer,
        on_fatal: Callable[[BaseException], None],
    ):
        self.llm = llm
        self.limiter = limiter
        self.sessions = sessions
        self.use_cache = use_cache
        self.counters = counters
        self.cache_buffer = cache_buffer
        self.on_fatal = on_fatal
        self._sampling = {"temperature": llm.temperature,
                          "structured_output": llm.structured_output, **llm.extra}
        # Keys already answered in this run: asking again means the answer was unusable (a
        # parse retry) or the request is a duplicate; either way, ask the provider afresh.
        self._answered: set[str] = set()
        self._flushing: asyncio.Task[Any] | None = None
        self._reader = cache_store.BatchedReader(sessions)

    async def __call__(
        self, system_prompt: str, user_prompt: str, *,
        response_format: dict[str, Any] | None = None,
    ) -> GenerateResult:
        model = self.llm.model
        messages = [{"role": "system", "content": system_prompt},
                    {"role": "user", "content": user_prompt}]
        key = cache_store.cache_key(
            model, messages, response_format if self.llm.structured_output else None,
            self._sampling)
        if self.use_cache and key not in self._answered:
            self._answered.add(key)
            hit = await self._reader.get(key)
            if hit is not None:
                self.counters.cache_hits += 1
                return GenerateResult(text=hit.text, usage=TokenUsage(), cost=0.0)
        async with self.limiter.slot() as slot:
            self.counters.provider_calls += 1
            try:
                result = await self.llm(system_prompt, user_prompt,
                                        response_format=response_format)
            except TransientProviderError as exc:
                if exc.status_code == 429:
                    self.counters.rate_limited += 1
                    slot.throttled(exc.retry_after)
                raise
            except ProviderError as exc:
                if is_fatal_for_run(exc):
                    self.on_fatal(exc)
                raise
        self._answered.add(key)
        if self.use_cache:
            usage = result.usage
            answer = cache_store.CachedAnswer(
                text=result.text,
                prompt_tokens=usage.prompt_tokens if usage else None,
                completion_tokens=usage.completion_tokens if usage else None,
                cost=result.cost,
            )
            if self.cache_buffer.add(key, model, answer) and self._flushing is None:
                self._flushing = asyncio.create_task(self._flush())
        return result

    async def _flush(self) -> None:
        try:
            await asyncio.to_thread(self.cache_buffer.flush)
        except Exception:  # the cache is an optimisation: losing a batch costs calls, not grades
            log.exception("could not store a batch of provider answers in the cache")
        finally:
            self._flushing = None

    async def close(self) -> None:
        if self._flushing is not None:
            await self._flushing
        await self._flush()
