"""The settings stored with a grading run. API keys are never part of them."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from grading.samples import check_samples
from grading.structured_output import output_mode
from grading.types import ScoringSettings

GraderKind = Literal["per_criterion", "one_shot", "rubric_as_judge"]
# grading's DefaultFallbackVerdicts is a typing.TypedDict, which pydantic refuses on 3.11.
FallbackVerdicts = dict[
    Literal["positive", "negative"], Literal["MET", "UNMET", "CANNOT_ASSESS"]
]
MAX_EXAMPLES = 20  # per criterion: more would crowd the judge's context for little gain
_SECRET_WORDS = ("api_key", "apikey", "secret", "password", "access_token", "authorization")


class TokenPrice(BaseModel):
    """A price the user set for a model litellm has no price for (or a price of their own):
    USD per million input (prompt) and output (completion) tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_million: float = Field(ge=0.0, allow_inf_nan=False)
    output_per_million: float = Field(ge=0.0, allow_inf_nan=False)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_million
                + completion_tokens * self.output_per_million) / 1_000_000


class CalibrationSettings(BaseModel):
    """Few-shot calibration: up to ``k`` reviewed examples per criterion, drawn with ``seed``
    when the run is launched and recorded in ``run_examples``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    k: int = Field(ge=1, le=MAX_EXAMPLES)
    seed: int = Field(default=0, ge=0)


class RunSettings(ScoringSettings):
    """Everything besides rubric, responses, grader and model that defines a run: the
    scoring settings (inherited, so their fields and bounds are defined once) and more."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_retries: int = Field(default=2, ge=0)
    allow_cannot_assess: bool = False
    fallback_verdicts: FallbackVerdicts | None = None
    system_prompt: str | None = None
    api_base: str | None = None
    # When set, the run's cost is counted from its tokens at this price (not litellm's).
    price: TokenPrice | None = None
    calibration: CalibrationSettings | None = None
    # Sampling and provider options passed through to the grader (temperature, ...).
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _refuse_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict):
            found = sorted(_secret_keys(data))
            if found:
                raise ValueError(
                    f"run settings must not contain credentials ({', '.join(found)}); "
                    "provider keys are read from the environment when the run executes"
                )
        return data

    @field_validator("api_base")
    @classmethod
    def _mask_api_base_credentials(cls, value: str | None) -> str | None:
        """``user:pass@`` and ``?api-key=`` are never stored; the grading process reads the
        full address from RUBRIC_WORKBENCH_API_BASE (grading.llm.resolve_api_base)."""
        from grading.redact import strip_url_credentials

        return strip_url_credentials(value)

    @field_validator("extra")
    @classmethod
    def _positive_cost_cap(cls, value: dict[str, Any]) -> dict[str, Any]:
        """A cap of 0, below 0 or not a number would stop the run before its first grade (or
        never): refused, so nothing is launched with it."""
        if "cost_cap" in value:
            cap = value["cost_cap"]
            if isinstance(cap, bool) or not isinstance(cap, int | float) or not (
                    math.isfinite(cap) and cap > 0):
                raise ValueError(f"the cost cap must be a positive amount of US dollars, got "
                                 f"{cap!r}")
        return value

    @field_validator("extra")
    @classmethod
    def _whole_pause_after(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Failed calls in a row before the run pauses (``storage.jobs.provider_breaker``):
        a whole number, 0 for never."""
        if "pause_after_failures" in value:
            count = value["pause_after_failures"]
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ValueError("pause_after_failures must be a whole number of failed calls "
                                 f"(0: never pause), got {count!r}")
        return value

    @field_validator("extra")
    @classmethod
    def _known_structured_output(cls, value: dict[str, Any]) -> dict[str, Any]:
        """How calls ask for JSON; ``auto`` (the default) is not stored, so runs launched
        before the option existed and runs launched with the default stay the same run."""
        if "structured_output" not in value:
            return value
        mode = output_mode(value["structured_output"])
        rest = {k: v for k, v in value.items() if k != "structured_output"}
        return rest if mode == "auto" else {**rest, "structured_output": mode}

    @field_validator("extra")
    @classmethod
    def _whole_samples(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Times each criterion is asked (grading.samples): 1 to 20. One, the default, is
        not stored, so runs launched before the option existed keep the same settings."""
        if "samples" not in value:
            return value
        count = check_samples(value["samples"])
        rest = {k: v for k, v in value.items() if k != "samples"}
        return rest if count == 1 else {**rest, "samples": count}

    @field_validator("extra")
    @classmethod
    def _boolean_shuffle_criteria(cls, value: dict[str, Any]) -> dict[str, Any]:
        """One-shot prompts list the criteria in a per-response order (grading.
        criterion_order). Off, the default, is not stored, so runs launched before the
        option existed keep the same settings."""
        if "shuffle_criteria" not in value:
            return value
        on = value["shuffle_criteria"]
        if not isinstance(on, bool):
            raise ValueError(f"shuffle_criteria must be true or false, got {on!r}")
        rest = {k: v for k, v in value.items() if k != "shuffle_criteria"}
        return {**rest, "shuffle_criteria": True} if on else rest

    @field_validator("extra")
    @classmethod
    def _boolean_shuffle_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Multi-choice options shown in a per-response order (grading.option_prompts). Kept
        as stored (runs launched with ``false`` keep their settings), but only true or
        false: "no" would have been read as on."""
        on = value.get("shuffle_options", False)
        if not isinstance(on, bool):
            raise ValueError(f"shuffle_options must be true or false, got {on!r}")
        return value

    @property
    def shuffle_options(self) -> bool:
        """Whether multi-choice options are shown in a per-response shuffled order."""
        return bool(self.extra.get("shuffle_options", False))

    @property
    def shuffle_criteria(self) -> bool:
        """Whether a one-shot run lists the criteria in a per-response shuffled order."""
        return bool(self.extra.get("shuffle_criteria", False))

    @property
    def samples(self) -> int:
        """Times the judge is asked about each criterion (1: once, as before)."""
        return int(self.extra.get("samples", 1))

    def scoring(self) -> ScoringSettings:
        """The part of the settings that decides scores, for ``grading.aggregation``."""
        return ScoringSettings(**{name: getattr(self, name)
                                  for name in ScoringSettings.model_fields})

    def grader_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for a ``grading.autograders`` grader built from these settings."""
        return {
            "normalize": self.normalize,
            "cannot_assess": self.cannot_assess,
            "partial_credit": self.partial_credit,
            "length_penalty": self.length_penalty,
            "max_retries": self.num_retries,
            "allow_cannot_assess": self.allow_cannot_assess,
            "default_fallback_verdicts": dict(self.fallback_verdicts)
            if self.fallback_verdicts else None,
            "system_prompt": self.system_prompt,
        }

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def cost_cap_of(extra: dict[str, Any] | None) -> float | None:
    """The cost cap (USD) a run's ``extra`` settings set, or None: the one reading of it, for
    the grading process (``JobOptions``) and for the chunks a helper may join."""
    cap = (extra or {}).get("cost_cap")
    return float(cap) if cap else None


def _secret_keys(data: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for key, value in data.items():
        lowered = str(key).lower().replace("-", "_")
        if any(word in lowered for word in _SECRET_WORDS):
            found.add(str(key))
        if isinstance(value, dict):
            found |= _secret_keys(value)
    return found
