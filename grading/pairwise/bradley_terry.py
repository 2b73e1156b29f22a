"""A Bradley-Terry leaderboard of three or more sources from pairwise outcomes.

Model: P(i beats j) = p_i / (p_i + p_j). Fitted by Hunter's MM algorithm (2004): p_i <- W_i /
sum_j n_ij / (p_i + p_j), where W_i counts i's wins (a tie is half a win for each side) and
n_ij the comparisons of i and j. ``prior`` adds that many virtual ties between every two
sources (shrinking towards equal strength): a source that won or lost everything still gets
a finite strength, and sources that never met directly are still placed. Strengths are
reported as log-strengths centred on 0 (the average source); ``win_probability`` against an
average source is p / (p + 1). Intervals: percentile bootstrap over the comparisons
(resampled with replacement, refitted, seeded).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from grading.bootstrap import Interval, percentile_interval

# (source shown as A, source shown as B, outcome for B: 1 win, 0.5 tie, 0 loss)
Comparison = tuple[str, str, float]


@dataclass(frozen=True)
class Standing:
    rank: int
    source: str
    strength: float  # log-strength, centred: 0 is the average source
    interval: Interval | None
    win_probability: float  # against an average source
    comparisons: int


def fit(comparisons: Sequence[Comparison], sources: Sequence[str] | None = None, *,
        prior: float = 0.1, tolerance: float = 1e-10, max_iterations: int = 10_000
        ) -> dict[str, float]:
    """Centred log-strengths by source (every source named in ``comparisons``, or
    ``sources``)."""
    import numpy as np  # lazily: the grading library installs without it

    names = list(sources) if sources is not None else sorted(
        {s for a, b, _ in comparisons for s in (a, b)})
    if len(names) < 2:
        raise ValueError("a leaderboard needs at least two sources")
    if prior < 0:
        raise ValueError(f"prior must be >= 0, got {prior}")
    index = {name: i for i, name in enumerate(names)}
    size = len(names)
    wins = np.zeros((size, size))  # wins[i, j]: i's wins over j (ties count half)
    for a, b, outcome in comparisons:
        if outcome not in (0, 0.5, 1):
            raise ValueError(f"an outcome must be 1 (B wins), 0.5 (tie) or 0, got {outcome!r}")
        i, j = index[a], index[b]
        if i == j:
            raise ValueError(f"a source cannot be compared with itself ({a!r})")
        wins[j, i] += outcome
        wins[i, j] += 1 - outcome
    off_diagonal = 1 - np.eye(size)
    wins += prior / 2 * off_diagonal
    games = wins + wins.T
    total_wins = wins.sum(axis=1)
    if np.any(total_wins <= 0):
        raise ValueError("a source with no win and no tie has no finite strength; use a "
                         "prior above 0")
    strength = np.ones(size)
    for _ in range(max_iterations):
        denominators = (games / (strength[:, None] + strength[None, :])).sum(axis=1)
        updated = total_wins / denominators
        updated /= math.exp(np.log(updated).mean())
        change = np.abs(np.log(updated) - np.log(strength)).max()
        strength = updated
        if change < tolerance:
            break
    return {name: float(np.log(strength[i])) for name, i in index.items()}


def leaderboard(comparisons: Sequence[Comparison], *, prior: float = 0.1,
                resamples: int = 200, seed: int = 0, level: float = 0.95) -> list[Standing]:
    """Sources ranked by Bradley-Terry strength, with bootstrap intervals."""
    import numpy as np

    if not comparisons:
        raise ValueError("no comparisons to rank")
    names = sorted({s for a, b, _ in comparisons for s in (a, b)})
    point = fit(comparisons, names, prior=prior)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float | None]] = {name: [] for name in names}
    for _ in range(resamples):
        picked = rng.integers(0, len(comparisons), size=len(comparisons))
        refit = fit([comparisons[k] for k in picked], names, prior=prior)
        for name in names:
            draws[name].append(refit[name])
    counts = {name: 0 for name in names}
    for a, b, _ in comparisons:
        counts[a] += 1
        counts[b] += 1
    ordered = sorted(names, key=lambda n: -point[n])
    return [Standing(rank=rank, source=name, strength=point[name],
                     interval=percentile_interval(draws[name], resamples=resamples,
                                                  level=level),
                     win_probability=math.exp(point[name]) / (math.exp(point[name]) + 1),
                     comparisons=counts[name])
            for rank, name in enumerate(ordered, start=1)]
