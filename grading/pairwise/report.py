"""What comparing one pair gives: per criterion both raw answers, the preference and whether
the two orders agreed; for the pair, B's weighted preference share and the winner."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from grading.pairwise.parsing import Side
from grading.types import Criterion, TokenUsage

Winner = Literal["A", "B", "TIE"]


class CriterionPreference(BaseModel):
    """One criterion (or, holistic, the whole rubric) judged in both orders.

    ``first``: the answer with A shown first; ``second``: the answer with B shown first, as the
    judge gave it (its "A" is our B); ``preference`` the combined answer (``orders.combine``),
    None when either call failed (``error`` says why)."""

    model_config = ConfigDict(frozen=True)

    criterion: Criterion
    first: Side | None = None
    second: Side | None = None
    first_reason: str = ""
    second_reason: str = ""
    preference: Side | None = None
    consistent: bool | None = None
    error: str | None = None


class PairReport(BaseModel):
    """The comparison of response B with response A.

    ``score``: B's weighted preference share, 0..1 (1: B better on every scored criterion, 0: A
    better on every one, 0.5: even), from the one aggregation function
    (``grading.pairwise.aggregation``); ``margin`` = 2 x score - 1, in -1..1. None when nothing
    could be scored (``error`` says why)."""

    model_config = ConfigDict(frozen=True)

    preferences: list[CriterionPreference]
    holistic: bool = False
    score: float | None = None
    margin: float | None = None
    winner: Winner | None = None
    scored_count: int = 0
    cannot_assess_count: int = 0
    failed_count: int = 0
    inconsistent_count: int = 0
    error: str | None = None
    calls: int = 0
    token_usage: TokenUsage | None = None
    completion_cost: float | None = None
