"""The data model: criteria, verdicts, reports, token usage, length-penalty settings."""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Literal, Protocol, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from grading.options import (
    CriterionOption,
    MultiChoiceVerdict,
    ScaleType,
    find_option,
    option_problems,
    worst_scored_option,
)
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


CriterionVerdict = Verdict  # autorubric's name


class ThinkingOutputDict(TypedDict, total=False):
    thinking: str
    output: str


ToGradeInput = str | ThinkingOutputDict


class DefaultFallbackVerdicts(TypedDict, total=False):
    """Verdicts to use for criteria the judge could not answer, by the weight's sign."""

    positive: Literal["MET", "UNMET", "CANNOT_ASSESS"]
    negative: Literal["MET", "UNMET", "CANNOT_ASSESS"]


class Criterion(BaseModel):
    """One weighted requirement. A negative weight marks an error to penalise.

    ``options=None``: binary (MET / UNMET). With options: multi-choice, ``scale_type``
    ordinal (ordered ratings) or nominal (categories); the chosen option earns
    ``value x weight``. ``required``: a gate (``grading.gates``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weight: float = 10.0
    requirement: str
    name: str | None = None
    section: str | None = None
    options: tuple[CriterionOption, ...] | None = None
    scale_type: ScaleType = "ordinal"
    required: bool = False

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

    @model_validator(mode="after")
    def _consistent(self) -> Criterion:
        problems = option_problems(self.options, self.scale_type) if self.options else []
        if self.options is not None and not self.options:
            problems.append("options must not be empty (leave options unset for MET/UNMET)")
        if self.required and self.weight == 0:
            problems.append("a required criterion needs a weight other than 0 (a gate on a "
                            "criterion that scores nothing)")
        if problems:
            where = f"criterion {self.name!r}" if self.name else f"criterion {self.requirement!r}"
            raise ValueError(f"{where}: " + "; ".join(problems))
        return self

    @property
    def is_negative(self) -> bool:
        return self.weight < 0

    @property
    def is_binary(self) -> bool:
        return self.options is None

    @property
    def is_multi_choice(self) -> bool:
        return self.options is not None

    @property
    def na_option_index(self) -> int | None:
        """Index of the first NA option (None: none, or a binary criterion)."""
        return next((i for i, o in enumerate(self.options or ()) if o.na), None)

    def get_option_value(self, index: int) -> float:
        if self.options is None:
            raise ValueError("a binary criterion has no options")
        if not 0 <= index < len(self.options):
            raise ValueError(f"option index {index} out of range [0, {len(self.options)})")
        return self.options[index].value

    def find_option_by_label(self, label: str) -> int:
        """Index of the option with this label (case and outer spaces ignored)."""
        if self.options is None:
            raise ValueError("a binary criterion has no options")
        index = find_option(self.options, label)
        if index is None:
            raise ValueError(f"label {label!r} not found; the options are "
                             f"{[o.label for o in self.options]}")
        return index

    def worst_scored_option(self) -> tuple[int, CriterionOption]:
        """(index, option) of the score-minimising non-NA option, weight-sign aware."""
        if self.options is None:
            raise ValueError("a binary criterion has no scored options")
        index = worst_scored_option(self.options, self.weight)
        return index, self.options[index]


class CriterionReport(Criterion):
    """A criterion with the verdict it received.

    ``verdict`` is ``None`` only when the judge failed on this criterion and no fallback
    was configured; ``error`` then says why. A fallback verdict keeps ``error`` set too, so
    that a synthesised verdict is never mistaken for a judgment.
    """

    verdict: Verdict | None = None
    multi_choice_verdict: MultiChoiceVerdict | None = None
    reason: str = ""
    error: str | None = None
    # Shown position -> original option index, when the options were shuffled.
    shuffle_order: tuple[int, ...] | None = None
    # Where the criterion was listed (1 = first) in the one-shot prompt whose answer gave
    # this verdict, when the grader shuffled the criteria per response (grading.
    # criterion_order); None otherwise, and for a verdict asked in a call of its own.
    prompt_position: int | None = None
    # Each sample's choice (MET / UNMET / CANNOT_ASSESS or an option's label; None for a
    # sample that failed) when the judge was asked several times; ``verdict`` is then their
    # majority (grading.samples). None when it was asked once.
    samples: tuple[str | None, ...] | None = None

    @property
    def choice(self) -> Verdict | str | None:
        """What the aggregation reads: the binary verdict, the chosen option's label, or
        CANNOT_ASSESS for an abstention that names no option; None when nothing was judged."""
        if self.options is None:
            return self.verdict
        chosen = self.multi_choice_verdict
        if chosen is None:
            return None
        if chosen.selected_index is None:
            return Verdict.CANNOT_ASSESS
        return self.options[chosen.selected_index].label

    # autorubric's names
    @property
    def criterion(self) -> Criterion:
        """The criterion this report is about (without the judgment)."""
        return Criterion(**{name: getattr(self, name) for name in Criterion.model_fields})

    @property
    def final_multi_choice_verdict(self) -> MultiChoiceVerdict | None:
        return self.multi_choice_verdict

    @property
    def final_verdict(self) -> Verdict | None:
        return self.verdict

    @property
    def final_reason(self) -> str:
        return self.reason

    @property
    def score_value(self) -> float:
        """1.0 for MET, 0.0 otherwise; the chosen option's value on a multi-choice one."""
        if self.verdict is not None:
            return 1.0 if self.verdict is Verdict.MET else 0.0
        if self.multi_choice_verdict is not None:
            return self.multi_choice_verdict.value
        return 0.0

    @property
    def is_na(self) -> bool:
        if self.verdict is Verdict.CANNOT_ASSESS:
            return True
        return self.multi_choice_verdict is not None and self.multi_choice_verdict.na

    @property
    def is_error(self) -> bool:
        return self.error is not None


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
    # Required criteria whose gate closed ("criterion 2 ('safety')"): the score is 0.
    closed_gates: tuple[str, ...] = ()
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
