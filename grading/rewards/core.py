"""A rubric as a reward for RL batches: one score per completion, graded by grading's graders
and its one aggregation.

What RL batches need, and what this adds to ``Rubric.grade``:
- identical completions (same query, thinking and output) are graded once: an in-flight
  de-duplication (concurrent duplicates await the same grading) and a bounded LRU cache;
- at most ``max_concurrency`` completions graded at once (each grader also bounds its calls);
- a failure policy: a judge that fails raises ``JudgeFailedError`` (``on_failure="raise"``,
  the default) or yields the explicit ``on_failure=<float>`` the user chose, flagged as a
  failure — never a silent 0.0 and never NaN;
- CANNOT_ASSESS scored with a strategy that keeps the denominator the same for every sample
  (``zero``, ``partial`` or ``fail``; ``skip`` would make rewards of different samples
  incomparable, so it is refused here).
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from grading.aggregation import read_choice
from grading.autograders import (
    PerCriterionGrader,
    PerCriterionOneShotGrader,
    RubricAsJudgeGrader,
)
from grading.autograders.base import Autograder
from grading.errors import ConfigurationError, RubricWorkbenchError, TransientProviderError
from grading.reference import check_reference
from grading.rubric import Rubric
from grading.types import (
    CriterionReport,
    EvaluationReport,
    GenerateResult,
    LengthPenalty,
    TokenUsage,
)

GraderName = Literal["per_criterion", "one_shot", "holistic"]
RewardCannotAssess = Literal["zero", "partial", "fail"]
GRADERS: dict[str, type[Autograder]] = {
    "per_criterion": PerCriterionGrader,
    "one_shot": PerCriterionOneShotGrader,
    "holistic": RubricAsJudgeGrader,
}


class JudgeFailedError(RubricWorkbenchError):
    """The judge could not grade a completion; there is no reward to give."""


@dataclass(frozen=True)
class RewardResult:
    """One completion's reward with what it is made of."""

    reward: float
    report: EvaluationReport
    failed: bool = False
    cached: bool = False
    verdicts: dict[str, str | None] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    # Each criterion's metric: MET 1.0 / UNMET 0.0, a chosen option's value; None for an
    # abstention (CANNOT_ASSESS, an NA option) or no verdict.
    values: dict[str, float | None] = field(default_factory=dict)


def criterion_key(index: int, criterion: Any) -> str:
    """A stable metric name for a criterion: its name, else ``c<number>``."""
    return criterion.name or f"c{index}"


class RubricReward:
    """Score completions against a rubric, for RL (see the module docstring)."""

    def __init__(
        self,
        rubric: Rubric | str | Path,
        generate_fn: Any,
        *,
        grader: GraderName = "per_criterion",
        cannot_assess: RewardCannotAssess = "zero",
        allow_cannot_assess: bool = True,
        partial_credit: float = 0.5,
        normalize: bool = True,
        length_penalty: LengthPenalty | None = None,
        on_failure: Literal["raise"] | float = "raise",
        max_concurrency: int = 16,
        cache_size: int = 4096,
        system_prompt: str | None = None,
        max_retries: int = 2,
    ):
        if grader not in GRADERS:
            raise ConfigurationError(
                f"unknown grader {grader!r}; use one of {', '.join(GRADERS)}")
        if cannot_assess not in ("zero", "partial", "fail"):
            raise ConfigurationError(
                f"cannot_assess={cannot_assess!r} is not available for rewards: use 'zero', "
                "'partial' or 'fail', which keep the same denominator for every sample")
        if on_failure != "raise" and (
            isinstance(on_failure, bool) or not isinstance(on_failure, int | float)
            or not math.isfinite(on_failure)
        ):
            raise ConfigurationError(
                f"on_failure must be 'raise' or a finite number, got {on_failure!r}")
        if max_concurrency < 1 or cache_size < 0:
            raise ConfigurationError("max_concurrency must be >= 1 and cache_size >= 0")
        self.rubric = rubric if isinstance(rubric, Rubric) else Rubric.from_file(str(rubric))
        self.grader = GRADERS[grader](
            generate_fn,
            system_prompt=system_prompt,
            normalize=normalize,
            length_penalty=length_penalty,
            cannot_assess=cannot_assess,
            partial_credit=partial_credit,
            allow_cannot_assess=allow_cannot_assess,
            max_retries=max_retries,
            max_concurrency=max_concurrency,
            on_error="report",
        )
        self.on_failure = on_failure
        self.max_concurrency = max_concurrency
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str, str, str | None], RewardResult] = OrderedDict()
        self._in_flight: dict[tuple[str, str, str, str | None],
                              asyncio.Future[RewardResult]] = {}
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self.judged = 0  # completions actually sent to the judge (not cache hits)

    @property
    def criterion_keys(self) -> list[str]:
        return [criterion_key(i, c) for i, c in enumerate(self.rubric.rubric, start=1)]

    def _semaphore(self) -> asyncio.Semaphore:
        loop_id = id(asyncio.get_running_loop())
        semaphore = self._semaphores.get(loop_id)
        if semaphore is None:
            semaphore = self._semaphores[loop_id] = asyncio.Semaphore(self.max_concurrency)
        return semaphore

    async def score(self, output: str, *, thinking: str = "", query: str | None = None,
                    reference: str | None = None) -> RewardResult:
        """The reward for one completion (text passed as parts, never re-parsed for tags).

        ``reference`` is the task's reference answer (ground truth): the judge sees it in its
        own block and compares the completion with it; a blank or missing one adds nothing."""
        if not isinstance(output, str) or not isinstance(thinking, str):
            raise ValueError("output and thinking must be strings")
        reference = check_reference(reference)
        key = (query or "", thinking, output, reference)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._deliver(self._cache[key], cached=True)
        pending = self._in_flight.get(key)
        if pending is not None:
            return self._deliver(await asyncio.shield(pending), cached=True)
        future: asyncio.Future[RewardResult] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            result = await self._grade(output, thinking, query, reference)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: awaiting duplicates re-raise it
            raise
        else:
            future.set_result(result)
            if not result.failed and self.cache_size:
                self._cache[key] = result
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        finally:
            del self._in_flight[key]
        return self._deliver(result, cached=False)

    def _deliver(self, result: RewardResult, *, cached: bool) -> RewardResult:
        if result.failed and self.on_failure == "raise":
            raise JudgeFailedError(
                f"the judge could not grade this completion: {result.report.error}")
        if cached:
            return RewardResult(result.reward, result.report, result.failed, True,
                                result.verdicts, result.reasons, result.values)
        return result

    async def score_batch(self, outputs: list[str], *, queries: list[str | None] | None = None,
                          thinkings: list[str] | None = None,
                          references: list[str | None] | None = None) -> list[RewardResult]:
        """Rewards for a group of completions, in order (duplicates graded once)."""
        queries = queries or [None] * len(outputs)
        thinkings = thinkings or [""] * len(outputs)
        references = references or [None] * len(outputs)
        return list(await asyncio.gather(*(
            self.score(o, thinking=t, query=q, reference=r)
            for o, t, q, r in zip(outputs, thinkings, queries, references, strict=True))))

    async def _grade(self, output: str, thinking: str, query: str | None,
                     reference: str | None = None) -> RewardResult:
        async with self._semaphore():
            self.judged += 1
            report = await self.rubric.grade({"thinking": thinking, "output": output},
                                             autograder=self.grader, query=query,
                                             reference_submission=reference)
        verdicts: dict[str, str | None] = {}
        reasons: dict[str, str] = {}
        values: dict[str, float | None] = {}
        for key, item in zip(self.criterion_keys, report.report or [], strict=False):
            choice = item.choice  # a Verdict, or a chosen option's label
            verdicts[key] = getattr(choice, "value", choice)
            values[key] = criterion_value(item)
            reasons[key] = item.reason or item.error or ""
        if report.score is None or not math.isfinite(report.score):
            fallback = 0.0 if self.on_failure == "raise" else float(self.on_failure)
            return RewardResult(fallback, report, True, False, verdicts, reasons, values)
        return RewardResult(float(report.score), report, False, False, verdicts, reasons,
                            values)


def verdict_value(verdict: str | None) -> float | None:
    """A binary criterion's metric: MET 1.0, UNMET 0.0, CANNOT_ASSESS / no verdict: None."""
    return {"MET": 1.0, "UNMET": 0.0}.get(verdict or "")


def criterion_value(item: CriterionReport) -> float | None:
    """A criterion's metric: a binary verdict's ``verdict_value``, or the chosen option's
    value (0..1, as the aggregation reads it); None for an abstention or no verdict."""
    if item.options is None:
        return verdict_value(item.verdict.value if item.verdict is not None else None)
    choice = item.choice
    return None if choice is None else read_choice(item, choice)


def openai_generate_fn(client: Any, model: str, **params: Any) -> Any:
    """A ``generate_fn`` over an OpenAI-compatible async client (``openai.AsyncOpenAI``) that
    the RL framework already has, so no litellm is needed in its environment."""

    async def generate(system_prompt: str, user_prompt: str, **_: Any) -> GenerateResult:
        completion = await client.chat.completions.create(
            model=model,
            messages=[{"role": "system", "content": system_prompt},
                      {"role": "user", "content": user_prompt}],
            **params,
        )
        usage = None
        if completion.usage is not None:
            usage = TokenUsage(prompt_tokens=completion.usage.prompt_tokens or 0,
                               completion_tokens=completion.usage.completion_tokens or 0,
                               total_tokens=completion.usage.total_tokens or 0)
        if not completion.choices:
            raise TransientProviderError("the provider returned no choices")
        return GenerateResult(text=completion.choices[0].message.content or "", usage=usage)

    return generate
