"""Which response a reviewer sees on the left of a pair, and what their answer means.

Sides are randomised per reviewer and pair, so a position bias of the people does not lean
one way over a whole comparison, but deterministically (a hash of the reviewer's key and the
pair's id): a reload, a second tab or another machine shows the same sides. The reviewer
answers in what they were shown — "A" is the response on the left, "B" the one on the
right — and the answer is mapped back to the comparison's own A and B before it is stored,
with ``swapped`` recorded beside it.
"""

from __future__ import annotations

import hashlib

from grading.pairwise.orders import mapped_back
from grading.pairwise.parsing import Side
from storage.errors import InvalidInputError

SIDES: tuple[Side, ...] = ("A", "B", "TIE", "CANNOT_ASSESS")
# What a person may type or press for each side (case and outer spaces ignored).
_NAMES: dict[str, Side] = {
    "A": "A", "B": "B", "T": "TIE", "TIE": "TIE", "CANNOT_ASSESS": "CANNOT_ASSESS",
    "CANNOT ASSESS": "CANNOT_ASSESS", "?": "CANNOT_ASSESS",
}


def shown_swapped(reviewer_key: str, pair_id: int) -> bool:
    """True when this reviewer is shown the comparison's B on the left of this pair."""
    digest = hashlib.sha256(f"pair-sides\0{reviewer_key}\0{pair_id}".encode()).digest()
    return bool(digest[0] & 1)


def parse_side(value: object, *, where: str) -> Side:
    """A side from what a person gave: A, B, T / TIE, or CANNOT_ASSESS (``?``)."""
    if isinstance(value, str):
        found = _NAMES.get(value.strip().upper())
        if found is not None:
            return found
    raise InvalidInputError(
        f"{where}: {value!r} is not a side; give A (the left response), B (the right one), "
        "T for a tie, or CANNOT_ASSESS")


def to_comparison(side: Side, swapped: bool) -> Side:
    """A side as the reviewer was shown it -> the comparison's own side."""
    return mapped_back(side) if swapped else side


def to_shown(side: Side, swapped: bool) -> Side:
    """The comparison's own side -> the side as this reviewer is shown it."""
    return mapped_back(side) if swapped else side
