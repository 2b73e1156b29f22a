"""Position effect from recorded option shuffles: is the option shown first chosen more
often than chance?

When a run shuffles a criterion's options for each response (grade_criteria.shuffle_order:
shown position -> option index), the position at which the chosen option was shown is,
without a position effect, uniform over the k options whatever the judge's taste in
content: the chance it was shown first is 1/k. The figure is the observed share of
choices that were shown first minus the expected share (the mean of 1/k), with a normal
95% interval from the per-choice differences; positive: the first option is favoured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from grading.trust.figures import Z95, Figure, mean, var


@dataclass(frozen=True)
class PositionEffect:
    first_rate: float | None  # share of choices shown first
    expected: float | None  # mean of 1/k under no effect
    excess: Figure  # first_rate - expected, with its interval and n


def chosen_position(shuffle_order: Sequence[int], option_index: int) -> int | None:
    """Where the chosen option was shown (0 = first); None if it was not among the shown."""
    try:
        return list(shuffle_order).index(option_index)
    except ValueError:
        return None


def first_position_effect(choices: Sequence[tuple[int, int]]) -> PositionEffect:
    """``choices``: (shown position of the chosen option, number of options shown)."""
    kept = [(p, k) for p, k in choices if k >= 2]
    n = len(kept)
    if n == 0:
        return PositionEffect(None, None, Figure(None, None, None, 0))
    diffs = [(1.0 if p == 0 else 0.0) - 1.0 / k for p, k in kept]
    first = mean(1.0 if p == 0 else 0.0 for p, _k in kept)
    expected = mean(1.0 / k for _p, k in kept)
    excess = first - expected
    if n < 2:
        return PositionEffect(first, expected, Figure(excess, None, None, n))
    half = Z95 * math.sqrt(var(diffs) / n)
    return PositionEffect(first, expected, Figure(excess, excess - half, excess + half, n))
