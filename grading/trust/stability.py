"""Does the judge give the same verdict twice? Figures across repeated samples.

Input: per response, the decided verdicts (MET / UNMET, or option labels) of m samples of
the same judge, only responses every sample decided. Per criterion:

- **flip rate**: the share of responses whose samples do not all agree (Wilson interval);
- **Fleiss' kappa** across samples (Fleiss 1971; statsmodels' ``fleiss_kappa`` with
  ``method="fleiss"`` is the reference in the tests), percentile bootstrap interval over
  responses;
- **noisy**: the mean, over responses, of the variance of the sampled values exceeds
  ``NOISY_VARIANCE`` = 0.05, autorubric's threshold for a noisy criterion. A verdict counts
  1 for MET and 0 for UNMET; an option its value rescaled to [0, 1] over the options. With 2
  samples that is a flip rate above 0.2, with 3 above 0.225 (a flipping response has variance
  1/4 or 2/9).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

from grading.trust.figures import Figure, SharedDraws, mean, percentile, wilson

NOISY_VARIANCE = 0.05


@dataclass(frozen=True)
class Stability:
    samples: int  # m: verdicts per response
    flip_rate: Figure  # n: responses every sample decided
    fleiss_kappa: Figure
    mean_variance: float | None
    noisy: bool | None  # None when nothing to tell (fewer than 2 samples or no responses)
    threshold: float = NOISY_VARIANCE


def count_table(ratings: Sequence[Sequence[Hashable]]) -> tuple[list[list[int]], list]:
    """Subjects x categories counts (the input of Fleiss' kappa), categories sorted."""
    categories = sorted({r for row in ratings for r in row}, key=str)
    index = {c: i for i, c in enumerate(categories)}
    table = []
    for row in ratings:
        counts = [0] * len(categories)
        for r in row:
            counts[index[r]] += 1
        table.append(counts)
    return table, categories


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of a subjects x categories count table, every subject rated by the same
    number of raters; None when it is undefined (no subjects, one rater, or every rating in
    one category: chance agreement 1)."""
    if not table:
        return None
    raters = sum(table[0])
    if raters < 2 or any(sum(row) != raters for row in table):
        if raters >= 2:
            raise ValueError("every subject must have the same number of ratings")
        return None
    subjects = len(table)
    agreement = mean([(sum(c * c for c in row) - raters) / (raters * (raters - 1))
                      for row in table])
    shares = [sum(row[j] for row in table) / (subjects * raters)
              for j in range(len(table[0]))]
    chance = sum(p * p for p in shares)
    if chance >= 1 - 1e-12:
        return None
    return (agreement - chance) / (1 - chance)


def _kappa_features(table: list[list[int]], raters: int):
    import numpy as np

    counts = np.asarray(table, dtype=float)
    per_subject = ((counts ** 2).sum(axis=1) - raters) / (raters * (raters - 1))
    return np.column_stack([np.ones(len(table)), per_subject, counts])


def _kappa_values(sums, raters: int):
    import numpy as np

    total = sums[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        agreement = sums[:, 1] / total
        shares = sums[:, 2:] / (total * raters)[:, None]
        chance = (shares ** 2).sum(axis=1)
        return np.where(chance < 1 - 1e-12, (agreement - chance) / (1 - chance), np.nan)


def _kappa_interval(sums, raters: int) -> tuple[float, float] | None:
    return percentile(_kappa_values(sums, raters))


def stability(per_response: Mapping[Hashable, Sequence[Hashable]], *,
              value: Callable[[Hashable], float] | None = None) -> Stability:
    """The figures over the responses in ``per_response`` (each with all m samples' decided
    verdicts). ``value`` maps a verdict to [0, 1] for the variance (default MET 1, else 0)."""
    items = [list(v) for v in per_response.values()]
    m = len(items[0]) if items else 0
    if any(len(r) != m for r in items):
        raise ValueError("every response must have the same number of samples")
    categories = sorted({v for r in items for v in r}, key=str)
    code = {c: i for i, c in enumerate(categories)}
    to_value = value or (lambda v: 1.0 if v == "MET" else 0.0)
    codes = [[code[v] for v in r] for r in items]
    draws = SharedDraws(len(items))
    return prepare_stability(codes, [to_value(c) for c in categories], draws=draws,
                             rows=range(len(items)))()


def prepare_stability(codes, unit_values: Sequence[float], *, draws: SharedDraws,
                      rows: Sequence[int]) -> Callable[[], Stability]:
    """``stability`` on ``draws`` shared with other figures: ``codes`` is responses x
    samples category indices (every sample decided), ``unit_values[code]`` the category's
    value in [0, 1]; the responses sit at positions ``rows`` of the draws. Call the result
    once every figure is prepared."""
    import numpy as np

    codes = np.asarray(codes, dtype=int).reshape(len(rows), -1)
    n, m = codes.shape
    if m < 2 or n == 0:
        empty = Figure(None, None, None, n)
        return lambda: Stability(m, empty, empty, None, None)
    flips = int((codes != codes[:, :1]).any(axis=1).sum())
    k = max(len(unit_values), int(codes.max()) + 1)
    table = np.stack([(codes == j).sum(axis=1) for j in range(k)], axis=1)
    kappa = _fleiss_of(table, m)
    handle = draws.add(rows, _kappa_features(table, m)) if kappa is not None and n >= 2 \
        else None
    values = np.asarray(unit_values, dtype=float)[codes]
    mean_var = float(values.var(axis=1).mean())

    def finish() -> Stability:
        interval = None if handle is None else _kappa_interval(draws.sums(handle), m)
        return Stability(
            samples=m, flip_rate=wilson(flips, n),
            fleiss_kappa=Figure(kappa, *(interval or (None, None)), n),
            mean_variance=mean_var, noisy=mean_var > NOISY_VARIANCE)

    return finish


def _fleiss_of(table, raters: int) -> float | None:
    """Fleiss' kappa of a numpy count table (the vectorised ``fleiss_kappa``)."""
    sums = _kappa_features(table, raters).sum(axis=0)[None, :]
    found = _kappa_values(sums, raters)[0]
    return None if found != found else float(found)  # NaN: undefined
