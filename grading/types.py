"""The data model: criteria, verdicts, reports, token usage, length-penalty settings."""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Literal, Protocol, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from grading.schemas import OneShotOutput, PerCriterionOutput, RubricAsJudgeOutput

CountFn = Callable[[str], int]
PenaltyType = Literal["ALL", "OUTPUT_ONLY", "THINKING_ONLY"]
CannotAssessStrategy = Literal["skip", "zero", "partial", "fail"]
CANNOT_ASSESS_STRATEGIES: tuple[str, ...] = ("skip", "zero", "partial", "fail")


class Verdict(StrEnum):
    """A judge's or a reviewer's decision on one criterion."""

    MET = "MET"
    UNMET = "UNMET"
    CANNOT_ASSESS = "CANNOT_ASSESS"

    @classmethod
    def parse(cls, value: object) -> Verdict:
        """Read a verdict written in any case, with spaces or hyphens for underscores."""
        if isinstance(value, Verdict):
            return value
        if not isinstance(value, str):
            raise ValueError(f"verdict must be MET, UNMET or CANNOT_ASSESS, got {value!r}")
        key = value.strip().upper().replace("-", "_").replace(" ", "_")
        try:
            return cls(key)
        except ValueError:
            raise ValueError(
                f"verdict must be MET, UNMET or CANNOT_ASSESS, got {value!r}"
            ) from None


class ThinkingOutputDict(TypedDict, total=False):
    thinking: str
    output: str


ToGradeInput = str | ThinkingOutputDict


class DefaultFallbackVerdicts(TypedDict, total=False):
    """Verdicts to use for criteria the judge could not answer, by the weight's sign."""

    positive: Literal["MET", "UNMET", "CANNOT_ASSESS"]
    negative: Literal["MET", "UNMET", "CANNOT_ASSESS"]


class Criterion(BaseModel):
    """One weighted requirement. A negative weight marks an error to penalise."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weight: float = 10.0
    requirement: str
    name: str | None = None
    section: str | None = None

    @field_validator("weight")
    @classmethod
    def _finite_weight(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError(f"weight must be a finite number, got {value!r}")
        return float(value)

    @field_validator("requirement")
    @classmethod
    def _non_empty_requirement(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("requirement must not be empty")
        return value

    @field_validator("name", "section")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        return value or None

    @property
    def is_negative(self) -> bool:
        return self.weight < 0


class CriterionReport(Criterion):
    """A criterion with the verdict it received.

    ``verdict`` is ``None`` only when the judge failed on this criterion and no fallback
    was configured; ``error`` then says why. A fallback verdict keeps ``error`` set too, so
    that a synthesised verdict is never mistaken for a judgment.
    """

    verdict: Verdict | None
    reason: str = ""
    error: str | None = None


class TokenUsage(BaseModel):
    """Tokens spent on provider calls; adds up with ``+``."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            **{name: getattr(self, name) + getattr(other, name) for name in TokenUsage.model_fields}
        )


class EvaluationReport(BaseModel):
    """The result of grading one response.

    ``score`` is ``None`` when no score could be made (an error, or nothing left to score);
    it is never a made-up 0.0. ``raw_score`` is the weighted sum before normalisation and
    before the length penalty.
    """

    model_config = ConfigDict(frozen=True)

    score: float | None
    raw_score: float | None = None
    llm_raw_score: float | None = None
    report: list[CriterionReport] | None = None
    # The holistic judge's explanation (RubricAsJudgeGrader); per-criterion reasons are in
    # ``report``.
    reason: str | None = None
    error: str | None = None
    # Things the user should know that are not failures, e.g. a holistic score the judge gave
    # outside 0-100 that was clamped.
    notes: tuple[str, ...] = ()
    cannot_assess_count: int = 0
    length_penalty: float | None = None
    token_usage: TokenUsage | None = None
    completion_cost: float | None = None


class LengthPenalty(BaseModel):
    """Settings of the penalty subtracted from the score of an overly long response."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    free_budget: int = Field(default=6000, ge=0)
    max_cap: int = Field(default=8000, ge=0)
    penalty_at_cap: float = Field(default=0.5, ge=0.0)
    exponent: float = Field(default=1.6, gt=0.0)
    count_fn: CountFn | None = Field(default=None, exclude=True)
    penalty_type: PenaltyType = "ALL"

    @model_validator(mode="after")
    def _cap_after_budget(self) -> LengthPenalty:
        if self.max_cap <= self.free_budget:
            raise ValueError(
                f"max_cap ({self.max_cap}) must be greater than free_budget ({self.free_budget})"
            )
        return self


class ScoringSettings(BaseModel):
    """Everything besides the verdicts that decides a score. Stored with each grading run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    normalize: bool = True
    cannot_assess: CannotAssessStrategy = "skip"
    partial_credit: float = Field(default=0.5, ge=0.0, le=1.0)
    length_penalty: LengthPenalty | None = None


class GenerateResult(BaseModel):
    """What a ``generate_fn`` may return instead of a bare string: text plus usage and cost."""

    model_config = ConfigDict(frozen=True)

    text: str
    usage: TokenUsage | None = None
    cost: float | None = None
    raw: Any = Field(default=None, exclude=True, repr=False)
    # Called by the retry loop once the text parsed (e.g. to cache only usable answers).
    accept: Any = Field(default=None, exclude=True, repr=False)


class GenerateFn(Protocol):
    """``generate_fn(system_prompt, user_prompt)``: returns the judge's answer as text, a
    GenerateResult, or (``rubric`` 2.x) an output model such as PerCriterionOutput."""

    async def __call__(
        self, system_prompt: str, user_prompt: str, **kwargs: Any
    ) -> str | GenerateResult | BaseModel: ...


class AutograderFn(Protocol):
    """``rubric.types.AutograderFn``: a grading function."""

    async def __call__(
        self, to_grade: str, rubric: list[Criterion], generate_fn: GenerateFn, **kwargs: Any
    ) -> EvaluationReport: ...


class PerCriterionGenerateFn(Protocol):
    """``rubric`` 2.x: a generate_fn returning a PerCriterionOutput."""

    async def __call__(
        self, system_prompt: str, user_prompt: str, **kwargs: Any
    ) -> PerCriterionOutput: ...


class OneShotGenerateFn(Protocol):
    """``rubric`` 2.x: a generate_fn returning a OneShotOutput."""

    async def __call__(
        self, system_prompt: str, user_prompt: str, **kwargs: Any
    ) -> OneShotOutput: ...


class RubricAsJudgeGenerateFn(Protocol):
    """``rubric`` 2.x: a generate_fn returning a RubricAsJudgeOutput."""

    async def __call__(
        self, system_prompt: str, user_prompt: str, **kwargs: Any
    ) -> RubricAsJudgeOutput: ...
