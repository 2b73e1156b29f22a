"""Percentile bootstrap intervals for agreement figures computed on a few hundred items.

Pure and seeded: the same items and seed give the same interval. Resamples whose statistic
cannot be computed (e.g. every resampled pair is of one class) are left out and counted.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    level: float
    resamples: int  # the resamples the interval is made of
    undefined: int  # resamples where the statistic had no value


def bootstrap_interval(
    count: int, statistic: Callable[[Sequence[int]], float | None], *, resamples: int = 1000,
    seed: int = 0, level: float = 0.95,
) -> Interval | None:
    """Interval of ``statistic(indices)`` over ``resamples`` draws of ``count`` indices with
    replacement; None when there are fewer than two items or too few defined resamples."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if count < 2:
        return None
    rng = random.Random(seed)
    values = []
    undefined = 0
    for _ in range(resamples):
        value = statistic([rng.randrange(count) for _ in range(count)])
        if value is None:
            undefined += 1
        else:
            values.append(value)
    if len(values) < max(2, resamples // 2):
        return None
    values.sort()
    tail = (1 - level) / 2
    low = values[math.floor(tail * (len(values) - 1))]
    high = values[math.ceil((1 - tail) * (len(values) - 1))]
    return Interval(low, high, level, len(values), undefined)
