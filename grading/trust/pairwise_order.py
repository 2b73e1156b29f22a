"""Pairwise order effect: does a judge asked to compare two responses prefer the one shown
first, whatever the responses are?

A comparison asks the judge about each pair (and criterion) twice, once with A shown first
and once with B shown first (grading.pairwise.orders). Each such pair-criterion is a unit
with two answers as the judge gave them: "A" is then the response shown first, "B" the one
shown second. Without a position effect the first-shown response is picked as often as the
second.

- **first shown preferred**: per unit whose two answers both picked a side, the share of its
  two picks that went to the response shown first (1: both, 0.5: one, 0: neither); the
  figure is the mean over units minus the chance 0.5, with the Wilson score interval of the
  mean (successes = the sum of the units' shares). A unit's two answers are not
  independent, so they count as one unit, not two answers; the Wilson interval of a
  share in [0, 1] is conservative (its variance bound p(1 - p) is the largest such a
  share can have) and never shrinks to a point.
- **position consistency**: the share of units (answers A, B or TIE in both orders) that
  gave the same preference in both orders (the stored ``consistent`` flag), with its
  Wilson interval (as grading.pairwise.summary).
- **Can't tell yet** below ``MIN_UNITS`` units: no value, the n is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grading.trust.figures import Figure, wilson

MIN_UNITS = 10
CHANCE = 0.5
_DECIDED = ("A", "B")
_JUDGED = ("A", "B", "TIE")


@dataclass(frozen=True)
class PairwiseOrder:
    first_shown: Figure  # share of picks going to the first-shown response minus 0.5
    first_shown_share: float | None  # the share itself
    consistency: Figure  # share of units answered the same way in both orders
    units: int  # pair-criteria with an answer in both orders
    both_first: int  # units where both answers picked the response shown first
    both_second: int  # units where both answers picked the response shown second

    @property
    def enough(self) -> bool:
        return self.first_shown.value is not None


def pairwise_order(answers: Sequence[tuple[str | None, str | None]],
                   min_units: int = MIN_UNITS) -> PairwiseOrder:
    """``answers``: per unit, (answer with A shown first, answer with B shown first) as
    the judge gave them (A = the response shown first); None or CANNOT_ASSESS: no answer."""
    judged = [(a, b) for a, b in answers if a in _JUDGED and b in _JUDGED]
    decided = [(a, b) for a, b in judged if a in _DECIDED and b in _DECIDED]
    consistent = sum(1 for a, b in judged if _same_preference(a, b))
    firsts = sum((a == "A") + (b == "A") for a, b in decided) / 2
    share = wilson(firsts, len(decided)) if decided else Figure(None, None, None, 0)
    both_first = sum(1 for a, b in decided if a == b == "A")
    both_second = sum(1 for a, b in decided if a == b == "B")
    held = wilson(consistent, len(judged)) if judged else Figure(None, None, None, 0)
    min_units = max(1, min_units)
    if len(decided) < min_units:
        first = Figure(None, None, None, len(decided))
    else:
        first = Figure(share.value - CHANCE, share.low - CHANCE, share.high - CHANCE,
                       len(decided))
    if len(judged) < min_units:
        held = Figure(None, None, None, len(judged))
    return PairwiseOrder(first_shown=first, first_shown_share=share.value,
                         consistency=held, units=len(judged), both_first=both_first,
                         both_second=both_second)


def _same_preference(first: str, second_as_given: str) -> bool:
    """The same preference in both orders (the second answer mapped back: A <-> B)."""
    from grading.pairwise.orders import mapped_back

    return first == mapped_back(second_as_given)
