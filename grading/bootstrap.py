"""Percentile bootstrap intervals for agreement figures computed on a few hundred items.

Pure and seeded: the same items and seed give the same interval. Resamples whose statistic
cannot be computed (e.g. every resampled pair is of one class) are left out and counted.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

DRAW_CHUNK = 50  # resamples drawn (and summed) at a time


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    level: float
    resamples: int  # the resamples the interval is made of
    undefined: int  # resamples where the statistic had no value


def wilson_interval(successes: float, n: int, level: float = 0.95) -> Interval | None:
    """The Wilson score interval of ``successes`` in ``n`` (a tie may count half): sound
    near 0 and 1 and at small n, where a bootstrap or p ± z·se collapses to a point. None
    without items."""
    if n <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p, z2 = successes / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(max(0.0, p * (1 - p)) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return Interval(max(0.0, centre - half), min(1.0, centre + half), level, 0, 0)


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
    values = [statistic([rng.randrange(count) for _ in range(count)])
              for _ in range(resamples)]
    return percentile_interval(values, resamples=resamples, level=level)


def percentile_interval(values: Sequence[float | None], *, resamples: int,
                        level: float = 0.95) -> Interval | None:
    """The percentile interval of resampled values (None: the statistic had no value on
    that resample); None when fewer than half the resamples (or fewer than two) have one."""
    defined = sorted(v for v in values if v is not None)
    if len(defined) < max(2, resamples // 2):
        return None
    tail = (1 - level) / 2
    low = defined[math.floor(tail * (len(defined) - 1))]
    high = defined[math.ceil((1 - tail) * (len(defined) - 1))]
    return Interval(low, high, level, len(defined), len(values) - len(defined))


def percentile_interval_array(values, *, resamples: int,
                              level: float = 0.95) -> Interval | None:
    """``percentile_interval`` of a float array, NaN where the statistic had no value: the
    same interval (the same values sorted, the same ranks taken)."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    defined = np.sort(values[~np.isnan(values)])
    if len(defined) < max(2, resamples // 2):
        return None
    tail = (1 - level) / 2
    low = float(defined[math.floor(tail * (len(defined) - 1))])
    high = float(defined[math.ceil((1 - tail) * (len(defined) - 1))])
    return Interval(low, high, level, len(defined), len(values) - len(defined))


def resample_weights(count: int, *, resamples: int = 1000, seed: int = 0):
    """How many times each of ``count`` items is drawn in each resample (a resamples x count
    integer array): sums of per-item contributions weighted by a row are the statistic's
    inputs on that resample, so many figures share one set of draws. numpy's PCG64 with
    ``seed``: the same items and seed give the same draws.

    The array has the smallest unsigned type that holds ``count`` (an item is drawn at most
    ``count`` times): 20 MB rather than 80 MB at 10,000 items. The draws are made
    ``DRAW_CHUNK`` resamples at a time, in the order one call would make them."""
    import numpy as np  # lazily: only the baseline intervals need it

    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    rng = np.random.default_rng(seed)
    weights = np.empty((resamples, count), dtype=np.min_scalar_type(count))
    for start in range(0, resamples, DRAW_CHUNK):
        rows = min(DRAW_CHUNK, resamples - start)
        draws = rng.integers(0, count, size=(rows, count))
        # one count per (row, item): the row's draws offset into a flat range of its own
        flat = (draws + (np.arange(rows) * count)[:, None]).ravel()
        weights[start:start + rows] = np.bincount(flat, minlength=rows * count).reshape(
            rows, count)
    return weights


def weighted_sums(weights, contributions) -> list[list]:
    """Per resample, the sums of per-item contributions (an items x k array) weighted by that
    resample's draws, as lists (``weighted_sums_array``)."""
    return weighted_sums_array(weights, contributions).tolist()


def weighted_sums_array(weights, contributions):
    """``weighted_sums`` as a resamples x k array, computed ``DRAW_CHUNK`` resamples at a
    time so the small-typed weights are never widened all at once (a widened copy of them
    all, reused by every figure, was slower: 40 MB per figure through memory at 5,000
    items, where a chunk's copy stays in the cache)."""
    import numpy as np

    dtype = contributions.dtype
    # Integer contributions: numpy multiplies integer matrices without BLAS (4 s of the
    # human baseline at 5,000 reviewed responses). In float64 every partial sum is an
    # integer below 2**53, so BLAS gives the exact integers back.
    exact = (np.issubdtype(dtype, np.integer) and len(weights)
             and int(np.abs(contributions).sum()) * int(weights.shape[1]) < 2 ** 53)
    work = np.float64 if exact else dtype
    values = contributions.astype(work, copy=False)
    found = np.concatenate([
        np.matmul(weights[start:start + DRAW_CHUNK].astype(work, copy=False), values)
        for start in range(0, len(weights), DRAW_CHUNK)])
    return found.astype(dtype) if exact else found
