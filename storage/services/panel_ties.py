"""Which tie rule a stored panel follows, kept in its ``scoring`` JSON (no migration).

A panel's decisions follow its members' grades (stored in ``panel_verdicts`` as they
land, with the tie rule they followed), so changing how a MET/UNMET tie is decided would
silently change every stored panel's verdicts and scores at the next rebuild. A panel made since
the one tie rule (grading.ties: a tie is undecided) stores ``"tie_rule": "undecided"`` beside
its scoring settings; a panel stored before has no such key and keeps the rule it was made
with, the verdict with the lower score."""

from __future__ import annotations

from typing import Any

from grading.ties import LOWER_SCORE, TIE_RULES, UNDECIDED, TieRule
from grading.types import ScoringSettings

KEY = "tie_rule"


def stored(scoring: ScoringSettings, tie_rule: TieRule = UNDECIDED) -> dict[str, Any]:
    """The JSON a new panel stores: its scoring settings and its tie rule."""
    return {**scoring.model_dump(mode="json"), KEY: tie_rule}


def read(data: dict[str, Any]) -> tuple[ScoringSettings, TieRule]:
    """A stored panel's scoring settings and tie rule (none stored: the lower score)."""
    rest = {k: v for k, v in data.items() if k != KEY}
    rule = data.get(KEY, LOWER_SCORE)
    if rule not in TIE_RULES:
        raise ValueError(f"stored panel: unknown tie rule {rule!r}")
    return ScoringSettings.model_validate(rest), rule
