"""Both orders: the answer given with the responses swapped, mapped back, and the rule that
turns the two answers into one preference."""

from __future__ import annotations

from grading.pairwise.parsing import Side

_SWAPPED: dict[str, Side] = {"A": "B", "B": "A", "TIE": "TIE", "CANNOT_ASSESS": "CANNOT_ASSESS"}


def mapped_back(side: Side) -> Side:
    """An answer given with B shown first, in the original sides (A <-> B; TIE stays)."""
    return _SWAPPED[side]


def combine(first: Side, second_as_given: Side) -> tuple[Side, bool]:
    """(preference, consistent) from the answer in the order (A, B) and the answer in the
    order (B, A) as the judge gave it. The same answer in both orders is the preference;
    answers that differ (the verdict followed the position, not the responses) make a TIE,
    marked position-inconsistent."""
    second = mapped_back(second_as_given)
    if first == second:
        return first, True
    return "TIE", False
