"""Position effect from recorded option shuffles: is the option shown first chosen more
often than chance?

When a run shuffles a criterion's options for each response (grade_criteria.shuffle_order:
shown position -> option index), the position at which the chosen option was shown is,
without a position effect, uniform over the k options whatever the judge's taste in
content: the chance it was shown first is 1/k. The figure is the observed share of
choices that were shown first minus the expected share (the mean of 1/k, fixed by the
shuffles). Its 95% interval is the Wilson score interval of the share shown first, minus
the expected share: a count of successes, so it stays honest at small n and at shares of 0
or 1, where a normal interval from the per-choice differences shrinks to a point (three
choices all shown first gave "+0.50 [+0.50, +0.50]"). Below ``MIN_CHOICES`` choices it is
"can't tell yet": the excess has no value (the share and the expected share are given).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grading.trust.figures import Figure, mean, wilson

MIN_CHOICES = 10  # shuffled choices before a position effect is claimed either way


@dataclass(frozen=True)
class PositionEffect:
    first_rate: float | None  # share of choices shown first
    expected: float | None  # mean of 1/k under no effect
    excess: Figure  # first_rate - expected, with its interval and n; value None: can't tell

    @property
    def enough(self) -> bool:
        return self.excess.value is not None


def chosen_position(shuffle_order: Sequence[int], option_index: int) -> int | None:
    """Where the chosen option was shown (0 = first); None if it was not among the shown."""
    try:
        return list(shuffle_order).index(option_index)
    except ValueError:
        return None


def first_position_effect(choices: Sequence[tuple[int, int]],
                          min_choices: int = MIN_CHOICES) -> PositionEffect:
    """``choices``: (shown position of the chosen option, number of options shown)."""
    return grouped_position_effect([[choice] for choice in choices], min_choices)


def grouped_position_effect(units: Sequence[Sequence[tuple[int, int]]],
                            min_choices: int = MIN_CHOICES) -> PositionEffect:
    """``first_position_effect`` over choices grouped in units that are not independent (a
    panel's members on one response may have been shown the same order): each unit counts
    once, with its share of choices shown first in [0, 1], and the interval is Wilson's of
    the mean share over units — as ``grading.trust.pairwise_order`` does for a pair's two
    answers: a share cannot vary more than p(1 - p), so it is conservative. With one choice
    per unit it is exactly ``first_position_effect``; its n is the units."""
    kept = [found for found in ([(p, k) for p, k in unit if k >= 2] for unit in units)
            if found]
    n = len(kept)
    if n == 0:
        return PositionEffect(None, None, Figure(None, None, None, 0))
    first = sum(sum(1 for p, _k in unit if p == 0) / len(unit) for unit in kept)
    expected = mean(mean(1.0 / k for _p, k in unit) for unit in kept)
    share = wilson(first, n)
    if n < max(1, min_choices):
        return PositionEffect(share.value, expected, Figure(None, None, None, n))
    return PositionEffect(share.value, expected, Figure(
        share.value - expected, share.low - expected, share.high - expected, n))
