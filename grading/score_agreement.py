"""Agreement between two sources of scores: correlation, mean absolute and signed difference.

Sources are given as in grading/agreement.py: a mapping ``key -> score`` (key e.g. a response
id) or sequences aligned by position; ``None`` means "no score". A NaN or infinite score is a bug
upstream and raises ``ValueError`` rather than being read as missing.

- ``mean_signed_difference`` is the mean of ``B - A`` (the bias of B): positive when B scores
  higher than A, e.g. a lenient judge when A is the human.
- Spearman is Pearson on ranks, tied values sharing their average rank.
- A value that cannot be computed is ``None`` and ``note`` says why; never NaN: no pairs ->
  everything ``None``; fewer than 2 pairs or a source whose scores are all equal (zero
  variance) -> both correlations ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grading.agreement import align_sources

ScoreSource = Mapping[Any, float | None] | Sequence[float | None]


@dataclass(frozen=True)
class ScoreAgreement:
    """How far source B's scores agree with source A's on the keys they share."""

    pairs_used: int
    only_in_a: int
    only_in_b: int
    pearson: float | None
    spearman: float | None
    mean_absolute_difference: float | None
    mean_signed_difference: float | None
    note: str


def compare_scores(a: ScoreSource, b: ScoreSource) -> ScoreAgreement:
    """Pearson, Spearman, mean |B - A| and mean (B - A) over the keys scored by both sources."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        # B's scores of keys A has not are only counted (and checked): a judge's 100,000
        # scores against people's few thousand are not copied (same figures).
        keyed_a = {k: _finite(v) for k, v in a.items() if v is not None}
        scored_b = _checked_count(b)
        keyed_b = {k: _finite(b[k]) for k in keyed_a if b.get(k) is not None}
    else:
        keyed_a, keyed_b = ({k: _finite(v) for k, v in s.items()}
                            for s in align_sources([a, b]))
        scored_b = len(keyed_b)
    shared = [key for key in keyed_a if key in keyed_b]
    xs = [keyed_a[key] for key in shared]
    ys = [keyed_b[key] for key in shared]
    n = len(shared)
    counts = {"pairs_used": n, "only_in_a": len(keyed_a) - n, "only_in_b": scored_b - n}
    if n == 0:
        return ScoreAgreement(
            **counts, pearson=None, spearman=None, mean_absolute_difference=None,
            mean_signed_difference=None, note="no pairs to compare: no key has a score from both",
        )

    differences = [y - x for x, y in zip(xs, ys, strict=True)]
    pearson = spearman = None
    if n < 2:
        note = f"correlation undefined: it needs at least 2 pairs, found {n}"
    elif len(set(xs)) == 1 or len(set(ys)) == 1:
        constant = ", ".join(
            f"source {name}'s scores are all {values[0]:g}"
            for name, values in (("A", xs), ("B", ys))
            if len(set(values)) == 1
        )
        note = f"correlation undefined: {constant} (zero variance)"
    else:
        note = ""
        pearson = _pearson(xs, ys)
        spearman = _pearson(_average_ranks(xs), _average_ranks(ys))
    return ScoreAgreement(
        **counts,
        pearson=pearson,
        spearman=spearman,
        # Divided before summing so that scores near the float limit cannot overflow the sum.
        mean_absolute_difference=math.fsum(abs(d) / n for d in differences),
        mean_signed_difference=math.fsum(d / n for d in differences),
        note=note,
    )


def _checked_count(scores: Mapping[Any, float | None]) -> int:
    """How many scores are not None, each checked as ``_finite`` checks it (at once when
    they are all plain numbers). Pure Python: the grading library installs without numpy."""
    values = [value for value in scores.values() if value is not None]
    try:
        if all(map(math.isfinite, values)):
            return len(values)
    except TypeError:  # what float() must judge (a numeric string)
        pass
    for value in values:
        _finite(value)
    return len(values)


def _finite(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"scores must be finite numbers or None, got {value!r}")
    return number


def _pearson(xs: list[float], ys: list[float]) -> float:
    dx, dy = _centred(xs), _centred(ys)
    covariance = math.fsum(p * q for p, q in zip(dx, dy, strict=True))
    spread = math.sqrt(math.fsum(p * p for p in dx)) * math.sqrt(math.fsum(q * q for q in dy))
    # Rounding can push |r| a hair past 1.
    return max(-1.0, min(1.0, covariance / spread))


def _centred(values: list[float]) -> list[float]:
    """Deviations from the mean scaled to at most 1 in size; r does not change with scale.

    Scaling keeps huge or tiny scores from overflowing or underflowing when squared; the largest
    deviation becomes 1, so the sum of squares is at least 1 for values that are not all equal.
    """
    size = max(abs(v) for v in values)
    scaled = [v / size for v in values]
    mean = math.fsum(scaled) / len(scaled)
    deviations = [v - mean for v in scaled]
    largest = max(abs(d) for d in deviations)
    return [d / largest for d in deviations]


def _average_ranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return ranks
