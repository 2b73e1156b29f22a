"""How a run is executed, from its stored settings: the job options the runner reads
itself, the grader it builds, and the window of responses it keeps in flight."""

from __future__ import annotations

import asyncio
import gc
from dataclasses import dataclass, field
from typing import Any

from grading.autograders import (
    PerCriterionGrader,
    PerCriterionOneShotGrader,
    RubricAsJudgeGrader,
)
from grading.autograders.base import Autograder
from grading.calibration import RubricExamples
from grading.retry import DEFAULT_CALL_DEADLINE
from storage.jobs import passes
from storage.jobs.provider_breaker import DEFAULT_PAUSE_AFTER
from storage.run_settings import RunSettings, cost_cap_of

GRADER_CLASSES: dict[str, type[Autograder]] = {
    "per_criterion": PerCriterionGrader,
    "one_shot": PerCriterionOneShotGrader,
    "rubric_as_judge": RubricAsJudgeGrader,
}
# Keys of RunSettings.extra the job runner reads itself; the rest goes to litellm.
JOB_OPTIONS = ("use_cache", "concurrency", "timeout", "call_deadline", "transport_retries",
               "cost_cap", "retry_passes",
               "pass_delay", "pause_after_failures", "shuffle_options", "shuffle_seed",
               "samples", "shuffle_criteria")
DEFAULT_TIMEOUT = 120.0
# Generous transport retries: the limiter keeps 429s rare, and a grade should survive a
# provider's bad minute rather than fail. Full-jitter backoff, never sooner than Retry-After.
TRANSPORT_RETRIES = 10
RETRY_BASE_DELAY = 0.25
RETRY_MAX_DELAY = 30.0


@dataclass(frozen=True)
class JobOptions:
    use_cache: bool = True
    concurrency: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    call_deadline: float = DEFAULT_CALL_DEADLINE
    transport_retries: int = TRANSPORT_RETRIES
    retry_passes: int = passes.DEFAULT_RETRY_PASSES
    pass_delay: float = passes.DEFAULT_PASS_DELAY
    cost_cap: float | None = None  # USD: the run stops (failed, saying so) once it spent this
    # failed calls of one kind in a row that pause the run (``provider_breaker``); 0: never
    pause_after: int = DEFAULT_PAUSE_AFTER
    litellm_extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: RunSettings) -> JobOptions:
        extra = dict(settings.extra)
        concurrency = extra.get("concurrency")
        return cls(
            use_cache=bool(extra.get("use_cache", True)),
            concurrency=int(concurrency) if concurrency else None,
            timeout=float(extra.get("timeout") or DEFAULT_TIMEOUT),
            call_deadline=float(extra.get("call_deadline") or DEFAULT_CALL_DEADLINE),
            transport_retries=int(extra.get("transport_retries", TRANSPORT_RETRIES)),
            retry_passes=int(extra.get("retry_passes", passes.DEFAULT_RETRY_PASSES)),
            pass_delay=float(extra.get("pass_delay", passes.DEFAULT_PASS_DELAY)),
            cost_cap=cost_cap_of(extra),
            pause_after=int(extra.get("pause_after_failures", DEFAULT_PAUSE_AFTER)),
            litellm_extra={k: v for k, v in extra.items() if k not in JOB_OPTIONS},
        )


def build_grader(grader: str, generate_fn: Any, settings: RunSettings,
                 transport_retries: int = TRANSPORT_RETRIES,
                 examples: RubricExamples | None = None) -> Autograder:
    """The grader of this kind, configured from the run's settings (and, for a calibrated
    run, the reviewed examples it recorded at launch)."""
    return GRADER_CLASSES[grader](
        generate_fn,
        **settings.grader_kwargs(),
        on_error="report",
        # The endpoint's limiter bounds concurrency; the grader's own bound must not.
        max_concurrency=1_000_000,
        transport_retries=transport_retries,
        retry_base_delay=RETRY_BASE_DELAY,
        retry_max_delay=RETRY_MAX_DELAY,
        call_deadline=JobOptions.from_settings(settings).call_deadline,
        examples=examples,
        # Kept in ``extra`` (absent: off) so runs launched before shuffling existed, and runs
        # without it, keep the same settings; the order shown is stored per verdict.
        shuffle_options=bool(settings.extra.get("shuffle_options", False)),
        seed=int(settings.extra.get("shuffle_seed", 0)),
        samples=settings.samples,
        # Only the one-shot grader lists the criteria in one prompt (runs.create_run
        # refuses the option for the others).
        shuffle_criteria=settings.shuffle_criteria,
    )


def calls_per_response(grader: str, criteria_count: int, samples: int = 1) -> int:
    return criteria_count * samples if grader == "per_criterion" else 1


class Window:
    """Responses in flight: enough to keep every slot of the limiter busy, few enough to
    bound memory; follows the limit as it is discovered."""

    def __init__(self, size):
        self._size = size
        self.active = 0
        self._changed = asyncio.Event()

    async def acquire(self) -> None:
        while self.active >= self._size():
            self._changed.clear()
            await self._changed.wait()
        self.active += 1

    def release(self) -> None:
        self.active -= 1
        self._changed.set()


def preload_litellm() -> None:
    """Import litellm (seconds of CPU), with its price map read locally, not fetched, and
    what its first call would import on the event loop (``grading.llm.FIRST_CALL_MODULES``)."""
    from grading.llm import _load_litellm

    _load_litellm()


def freeze_heap() -> None:
    """Leave what is loaded so far (litellm, SQLAlchemy, pydantic: a large heap) out of the
    cyclic garbage collector's passes from now on. A grading process allocates fast and so
    collects often; every full pass walked that heap again (~0.5 ms of CPU per provider
    call, measured). For the grading processes, once litellm is imported; not the app's."""
    gc.collect()
    gc.freeze()
