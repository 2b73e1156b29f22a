"""Executes one grading run: grades the responses that have no stored grade yet.

Each grade is written as soon as it completes (``storage.services.runs.record_grade``). A
failed grade is stored as a failed grade (score None + error) and the run goes on; the run is
``failed`` only when nothing can work (no credentials, unknown model), with what to do.
Provider calls go cache -> adaptive limiter -> litellm.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from grading.autograders import (
    PerCriterionGrader,
    PerCriterionOneShotGrader,
    RubricAsJudgeGrader,
)
from grading.autograders.base import Autograder
from grading.errors import ProviderError, TransientProviderError
from grading.llm import API_KEY_ENV, LiteLLMGenerate, key_env_var
from grading.types import Criterion, EvaluationReport, GenerateResult, TokenUsage
from storage.dto import ResponseInfo, RunInfo
from storage.engine import SessionFactory
from storage.errors import GradeExistsError, InvalidStateError
from storage.jobs import cache as cache_store
from storage.jobs import queue
from storage.jobs.limiter import AdaptiveLimiter, limiter_for
from storage.run_settings import RunSettings
from storage.services import datasets as dataset_service
from storage.services import rubrics as rubric_service
from storage.services import runs as run_service

log = logging.getLogger(__name__)

GRADER_CLASSES: dict[str, type[Autograder]] = {
    "per_criterion": PerCriterionGrader,
    "one_shot": PerCriterionOneShotGrader,
    "rubric_as_judge": RubricAsJudgeGrader,
}
# Keys of RunSettings.extra the job runner reads itself; the rest goes to litellm.
JOB_OPTIONS = ("use_cache", "concurrency", "timeout")
DEFAULT_TIMEOUT = 120.0
# Generous transport retries: the limiter keeps 429s rare, and a grade should survive a
# provider's bad minute rather than fail. Full-jitter backoff, never sooner than Retry-After.
TRANSPORT_RETRIES = 10
RETRY_BASE_DELAY = 0.25
RETRY_MAX_DELAY = 30.0
_FATAL_STATUS = frozenset({401, 403, 404})
# Keys whose absence means no call can work, for providers litellm needs a key for.
_KEYED_PROVIDERS = frozenset({
    "openai", "anthropic", "gemini", "azure", "openrouter", "together_ai", "mistral", "groq",
    "deepseek", "xai",
})


@dataclass(frozen=True)
class JobOptions:
    use_cache: bool = True
    concurrency: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    litellm_extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: RunSettings) -> JobOptions:
        extra = dict(settings.extra)
        concurrency = extra.get("concurrency")
        return cls(
            use_cache=bool(extra.get("use_cache", True)),
            concurrency=int(concurrency) if concurrency else None,
            timeout=float(extra.get("timeout") or DEFAULT_TIMEOUT),
            litellm_extra={k: v for k, v in extra.items() if k not in JOB_OPTIONS},
        )


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


@dataclass(frozen=True)
class RunResult:
    run_id: int
    status: str
    graded: int
    failed: int
    provider_calls: int
    cache_hits: int
    rate_limited: int
    error: str | None = None


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


def build_grader(grader: str, generate_fn: Any, settings: RunSettings) -> Autograder:
    """The grader of this kind, configured from the run's settings."""
    return GRADER_CLASSES[grader](
        generate_fn,
        **settings.grader_kwargs(),
        on_error="report",
        # The endpoint's limiter bounds concurrency; the grader's own bound must not.
        max_concurrency=1_000_000,
        transport_retries=TRANSPORT_RETRIES,
        retry_base_delay=RETRY_BASE_DELAY,
        retry_max_delay=RETRY_MAX_DELAY,
    )


def calls_per_response(grader: str, criteria_count: int) -> int:
    return criteria_count if grader == "per_criterion" else 1


class RunExecution:
    """The state of one run being executed by one worker."""

    def __init__(
        self, sessions: SessionFactory, run: RunInfo, criteria: list[Criterion], *,
        worker_id: str, concurrency: int | None, heartbeat_interval: float,
        stop: asyncio.Event | None,
    ):
        self.sessions = sessions
        self.run = run
        self.criteria = criteria
        self.worker_id = worker_id
        self.heartbeat_interval = heartbeat_interval
        self.stop = stop
        self.options = JobOptions.from_settings(run.settings)
        self.counters = Counters()
        self.totals = Counters()
        self.fatal: BaseException | None = None
        self.halt: str | None = None  # "cancelled", "lost", "stopped" or "fatal"
        self.graded = 0
        self.failed = 0
        self.unstored = 0
        self.unstored_error: str | None = None
        self.limiter = limiter_for(run.model, run.settings.api_base,
                                   self.options.concurrency or concurrency)
        llm = LiteLLMGenerate(run.model, api_base=run.settings.api_base,
                              timeout=self.options.timeout, **self.options.litellm_extra)
        self.generate = JobGenerate(
            llm, limiter=self.limiter, sessions=sessions, use_cache=self.options.use_cache,
            counters=self.counters, cache_buffer=cache_store.WriteBuffer(sessions),
            on_fatal=self._on_fatal,
        )
        self.grader = build_grader(run.grader, self.generate, run.settings)
        self._wake = asyncio.Event()

    def _on_fatal(self, exc: BaseException) -> None:
        if self.fatal is None:
            self.fatal = exc
            self._halt("fatal")

    def _halt(self, why: str) -> None:
        if self.halt is None:
            self.halt = why
        self._wake.set()

    async def _flush_counters(self) -> None:
        taken = self.counters.take()
        for name, value in taken.items():
            setattr(self.totals, name, getattr(self.totals, name) + value)
        await asyncio.to_thread(queue.add_job_stats, self.sessions, self.run.id, **taken)

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            try:
                state = await asyncio.to_thread(queue.renew, self.sessions, self.run.id,
                                                self.worker_id)
                await self._flush_counters()
            except Exception:  # the database may be back at the next beat; the lease says
                log.exception("heartbeat of run %s failed", self.run.id)  # how long to wait
                continue
            if state != "ok":
                self._halt(state)
                return

    async def _watch_stop(self) -> None:
        assert self.stop is not None
        await self.stop.wait()
        self._halt("stopped")

    async def _grade_one(self, response: ResponseInfo, window: asyncio.Semaphore) -> None:
        try:
            started = time.monotonic()
            try:
                report = await self.grader.grade(response.to_grade, self.criteria,
                                                 query=response.query)
            except Exception as exc:  # a bug must not end the run; it is logged in full
                log.exception("grading response %s of run %s failed", response.id,
                              self.run.id)
                report = EvaluationReport(
                    score=None, error=f"unexpected error: {type(exc).__name__}: {exc}")
            if self.fatal is not None:
                return  # not this response's fault: it stays pending for a requeue
            latency = time.monotonic() - started
            try:
                await asyncio.to_thread(run_service.record_grade, self.sessions, self.run.id,
                                        response.id, report, latency)
            except GradeExistsError:
                return  # another worker took over this run and got here first
            except Exception as exc:  # the response stays pending; the run says so at the end
                log.exception("could not store the grade of response %s of run %s",
                              response.id, self.run.id)
                self.unstored += 1
                self.unstored_error = self.unstored_error or f"{type(exc).__name__}: {exc}"
                return
            self.graded += 1
            if report.score is None and report.error is not None:
                self.failed += 1
        finally:
            window.release()

    async def execute(self) -> RunResult:
        problem = missing_credentials(self.run.model, self.run.settings.api_base)
        if problem is not None:
            return await self._finish_failed(problem)
        pending = await asyncio.to_thread(run_service.pending_response_ids, self.sessions,
                                          self.run.id)
        per_response = calls_per_response(self.run.grader, len(self.criteria))
        # Enough responses in flight to keep every slot busy, few enough to bound memory.
        window = asyncio.Semaphore(
            max(2, math.ceil(2 * self.limiter.stats().ceiling / per_response) + 2))
        helpers = [asyncio.create_task(self._heartbeat())]
        if self.stop is not None:
            helpers.append(asyncio.create_task(self._watch_stop()))
        tasks: set[asyncio.Task[None]] = set()
        halted = asyncio.create_task(self._wake.wait())
        helpers.append(halted)
        try:
            for start in range(0, len(pending), 100):
                if self.halt:
                    break
                batch = await asyncio.to_thread(
                    dataset_service.get_responses, self.sessions, pending[start:start + 100])
                for response in batch:
                    if window.locked():
                        acquired = asyncio.create_task(window.acquire())
                        await asyncio.wait({acquired, halted},
                                           return_when=asyncio.FIRST_COMPLETED)
                        if not acquired.done():
                            acquired.cancel()
                            break
                    else:
                        await window.acquire()
                    if self.halt:
                        window.release()
                        break
                    task = asyncio.create_task(self._grade_one(response, window))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
            while not self.halt:
                running = {t for t in tasks if not t.done()}
                if not running:
                    break
                await asyncio.wait({*running, halted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in list(tasks):
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for helper in helpers:
                helper.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            await self.generate.close()
            await self._flush_counters()
        return await self._conclude()

    async def _conclude(self) -> RunResult:
        if self.halt == "fatal":
            assert self.fatal is not None
            return await self._finish_failed(str(self.fatal))
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
            info = await asyncio.to_thread(run_service.finish_run, self.sessions, self.run.id)
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
            rate_limited=self.totals.rate_limited, error=error,
        )


async def execute_run(
    sessions: SessionFactory, run_id: int, *, worker_id: str, concurrency: int | None = None,
    heartbeat_interval: float = 5.0, stop: asyncio.Event | None = None,
) -> RunResult:
    """Grade what run ``run_id`` (already claimed by ``worker_id``) still has to grade."""
    run = await asyncio.to_thread(run_service.get_run, sessions, run_id)
    version = await asyncio.to_thread(rubric_service.get_version, sessions,
                                      run.rubric_version_id)
    execution = RunExecution(
        sessions, run, version.to_criteria(), worker_id=worker_id, concurrency=concurrency,
        heartbeat_interval=heartbeat_interval, stop=stop,
    )
    return await execution.execute()
