"""Criterion-order effect: is a criterion judged differently when a one-shot prompt lists it
early rather than late?

A one-shot run that shuffles the criteria per response (grading.criterion_order) records
where each criterion was listed (1 = first, of k). The order is random, so a difference
between the responses that saw a criterion early and those that saw it late is the order's
own effect (no control for the response's quality is needed: it is balanced by the draw).

- **early**: listed in the first half (position <= k // 2), **late**: in the second half
  (position > k - k // 2); the middle position of an odd k is in neither.
- The figure is ``mean(late) - mean(early)`` of the judge's value (MET 1 / UNMET 0, or the
  chosen option's value); negative: criteria listed late are judged lower. Its 95% interval:
  when every value is 0 or 1 (a MET rate: a difference of two proportions), Newcombe's
  hybrid score interval from the two Wilson intervals, which stays sound at rates of 0 or 1
  (a judge that always says MET early has no variance there, and a normal interval would
  shrink to a point). For option values, Welch's t interval (Satterthwaite's degrees of
  freedom) with each half's variance at least the variance it has with one more value at
  each end of the option scale (``scale``), as Agresti and Coull add pseudo-counts to a
  proportion: three identical ratings in each half give a wide interval around 0, never
  "+0.00 [+0.00, +0.00]"; with many spread-out values the floor barely moves it.
- **Can't tell yet** below ``MIN_PER_GROUP`` responses in either group: the difference has
  no value then (the means are still given with their n).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from grading.trust.figures import Figure, mean, var, wilson

MIN_PER_GROUP = 10  # responses in each of early and late before a difference is claimed


@dataclass(frozen=True)
class OrderEffect:
    early: Figure  # mean value when listed in the first half (no interval), its n
    late: Figure  # mean value when listed in the second half, its n
    late_minus_early: Figure  # value None: can't tell yet (too few in a group)
    listed: int  # criteria listed in the prompt (k); the largest seen

    @property
    def enough(self) -> bool:
        return self.late_minus_early.value is not None


def half(position: int, listed: int) -> str | None:
    """``early``, ``late`` or None (the middle of an odd list; a list of one)."""
    cut = listed // 2
    if cut == 0:
        return None
    if position <= cut:
        return "early"
    if position > listed - cut:
        return "late"
    return None


def order_effect(seen: Sequence[tuple[int, int, float]],
                 min_per_group: int = MIN_PER_GROUP,
                 scale: tuple[float, float] | None = None) -> OrderEffect:
    """``seen``: (position listed at, from 1; criteria listed; the judge's value);
    ``scale``: the lowest and highest option value (the variance floor of option values;
    None: the lowest and highest value seen, at least 0 and 1 apart)."""
    min_per_group = max(2, min_per_group)  # a variance needs two
    groups: dict[str, list[float]] = {"early": [], "late": []}
    listed = 0
    for position, k, value in seen:
        listed = max(listed, k)
        side = half(position, k)
        if side is not None:
            groups[side].append(float(value))
    early, late = groups["early"], groups["late"]
    means = [Figure(mean(g) if g else None, None, None, len(g)) for g in (early, late)]
    n = len(early) + len(late)
    if len(early) < min_per_group or len(late) < min_per_group:
        return OrderEffect(*means, Figure(None, None, None, n), listed)
    diff = mean(late) - mean(early)
    if all(v in (0.0, 1.0) for v in (*early, *late)):
        low, high = newcombe(int(sum(late)), len(late), int(sum(early)), len(early))
        return OrderEffect(*means, Figure(diff, low, high, n), listed)
    low, high = welch_floored(late, early, scale or _seen_scale(early + late))
    return OrderEffect(*means, Figure(diff, low, high, n), listed)


def _seen_scale(values: Sequence[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    return (low, high) if high - low >= 1 else (low, low + 1.0)


def floored_var(values: Sequence[float], scale: tuple[float, float]) -> float:
    """The sample variance of ``values``, at least that of ``values`` with one more value
    at each end of ``scale`` (an Agresti-Coull-like floor: a group with no spread yet is
    not taken to have none)."""
    return max(var(values), var([*values, *scale]))


def welch_floored(one: Sequence[float], two: Sequence[float],
                  scale: tuple[float, float]) -> tuple[float, float]:
    """95% interval of mean(one) - mean(two): Welch's t with floored variances."""
    from grading.trust.figures import t_quantile

    a, b = floored_var(one, scale) / len(one), floored_var(two, scale) / len(two)
    se = math.sqrt(a + b)
    df = (a + b) ** 2 / (a ** 2 / (len(one) - 1) + b ** 2 / (len(two) - 1))
    diff = mean(one) - mean(two)
    half_width = t_quantile(0.975, df) * se
    return diff - half_width, diff + half_width


def newcombe(hits1: int, n1: int, hits2: int, n2: int) -> tuple[float, float]:
    """95% interval of p1 - p2 (Newcombe 1998, method 10: hybrid score, no continuity
    correction) from each proportion's Wilson interval."""
    one, two = wilson(hits1, n1), wilson(hits2, n2)
    p1, p2 = one.value, two.value
    diff = p1 - p2
    return (diff - math.sqrt((p1 - one.low) ** 2 + (two.high - p2) ** 2),
            diff + math.sqrt((one.high - p1) ** 2 + (p2 - two.low) ** 2))
