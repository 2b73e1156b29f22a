"""Multi-choice criteria (autorubric's model): options with values, ordinal or nominal scales,
not-applicable options, and the weight-sign-aware worst option.

A criterion with ``options=None`` is binary (MET / UNMET / CANNOT_ASSESS). One with options
is judged by choosing one option; the chosen option contributes ``value x weight``. An NA
option (``na=True``) is an abstention: it is scored by the CANNOT_ASSESS strategy, exactly
as a binary CANNOT_ASSESS is (``grading.aggregation``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

ScaleType = Literal["ordinal", "nominal"]
SCALE_TYPES: tuple[str, ...] = ("ordinal", "nominal")
NA_MARK = "(cannot assess / not applicable)"


class CriterionOption(BaseModel):
    """One option of a multi-choice criterion: the label the judge sees and its value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str
    value: float
    na: bool = False

    @field_validator("label")
    @classmethod
    def _label_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("an option label must not be empty")
        return value

    @model_validator(mode="after")
    def _value_in_range(self) -> CriterionOption:
        # As autorubric: an NA option's value is never scored, so only scored ones are checked.
        if not math.isfinite(self.value) or (not self.na and not 0.0 <= self.value <= 1.0):
            raise ValueError(
                f"option {self.label!r}: value must be between 0 and 1, got {self.value!r}")
        return self


class MultiChoiceVerdict(BaseModel):
    """The option a judge (or a person) chose. ``selected_index`` is None for an abstention
    that names no option (a judge that failed, a person's CANNOT_ASSESS)."""

    model_config = ConfigDict(frozen=True)

    selected_index: int | None = None
    selected_label: str | None = None
    value: float
    na: bool = False


def label_key(label: str) -> str:
    """How labels are compared: case-insensitive, outer whitespace ignored (autorubric)."""
    return label.strip().lower()


def fits_choices(labels: frozenset[str] | None, option: str | None, verdict: str) -> bool:
    """A verdict given on an earlier version is one of the criterion's choices now
    (``labels``: its options' label keys, None for a binary criterion): a MET / UNMET on a
    binary criterion, one of its option labels on a multi-choice one, or CANNOT_ASSESS on
    either. A criterion that became multi-choice (or lost an option) with the same
    requirement text does not take a verdict it cannot score."""
    if option is None and verdict == "CANNOT_ASSESS":
        return True
    if labels is None:
        return option is None
    return option is not None and label_key(option) in labels


def find_option(options: Sequence[CriterionOption], label: str) -> int | None:
    """The index of the option with this label, or None."""
    wanted = label_key(label)
    return next((i for i, o in enumerate(options) if label_key(o.label) == wanted), None)


def worst_option_among(options: Sequence[CriterionOption], weight: float,
                       candidates: Iterable[int]) -> int:
    """The score-minimising option among ``candidates``: lowest value for weight >= 0,
    highest for weight < 0; the lowest index on a value tie (autorubric's tie-break)."""
    chosen = list(candidates)
    if not chosen:
        raise ValueError("no candidate options to choose among")
    if weight < 0:
        return max(chosen, key=lambda i: (options[i].value, -i))
    return min(chosen, key=lambda i: (options[i].value, i))


def worst_scored_option(options: Sequence[CriterionOption], weight: float) -> int:
    """The score-minimising option that is not NA (the FAIL strategy's choice)."""
    return worst_option_among(options, weight, [i for i, o in enumerate(options) if not o.na])


def option_problems(options: Sequence[CriterionOption], scale_type: str) -> list[str]:
    """What is wrong with a criterion's options ([] when nothing is)."""
    problems = []
    scored = [o for o in options if not o.na]
    if len(scored) < 2:
        kind = "an ordinal" if scale_type == "ordinal" else "a multi-choice"
        problems.append(f"{kind} criterion needs at least two options that are not NA, "
                        f"got {len(scored)}")
    seen: dict[str, str] = {}
    for option in options:
        key = label_key(option.label)
        if key in seen:
            problems.append(f"option label {option.label!r} is used twice"
                            + (f" (also as {seen[key]!r})" if seen[key] != option.label else ""))
        seen.setdefault(key, option.label)
    return problems


def shown_label(option: CriterionOption) -> str:
    """An option as listed for the judge: NA options carry a mark unless the label says so."""
    lowered = option.label.lower()
    if option.na and not any(t in lowered for t in ("n/a", "not applicable", "cannot assess")):
        return f"{option.label} {NA_MARK}"
    return option.label
