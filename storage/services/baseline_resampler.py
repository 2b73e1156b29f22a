"""The human baseline's bootstrap: one set of draws over a criterion's responses, shared by
its figures, and each figure's per-response contributions (confusion cells, alpha's sums,
pooled pairs) whose weighted sums are the figure's inputs on every resample.

Responses whose verdicts are the same from every source (reviewers, the verdict in force,
the judges) contribute the same to every figure: ``Resampler.grouped`` resamples such groups
(a group's weight in a resample is the sum of its responses' draws) and ``weighted_compare``
counts a group as its size. The weighted sums are the same integers as over the responses,
so every figure is the same float (docs/design/scale.md, "The baseline by verdict
patterns")."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import combinations

from grading.agreement import (
    PairwiseAgreement,
    alpha_value,
    compare_counts,
    pair_scores,
)
from grading.agreement_arrays import pair_scores_array
from grading.bootstrap import (
    Interval,
    percentile_interval,
    percentile_interval_array,
    resample_weights,
    weighted_sums,
    weighted_sums_array,
)
from grading.types import Verdict

_DECIDED = (Verdict.MET, Verdict.UNMET)
RESAMPLES = 1000
SEED = 0
_CODE = {Verdict.MET: 0, Verdict.UNMET: 1}
_CELL = {(Verdict.MET, Verdict.MET): 0, (Verdict.MET, Verdict.UNMET): 1,
         (Verdict.UNMET, Verdict.MET): 2, (Verdict.UNMET, Verdict.UNMET): 3}


class Draws:
    """The draws of each number of items, made once per baseline: the same number of items
    and seed give the same draws (``resample_weights``), so criteria with as many responses
    share them."""

    def __init__(self, seed: int = SEED):
        self.seed = seed
        self._weights: dict[int, object] = {}
        self._by_item: dict[int, object] = {}

    def weights(self, count: int):
        """``resample_weights(count)``: resamples x items."""
        if count not in self._weights:
            self._weights[count] = resample_weights(count, resamples=RESAMPLES, seed=self.seed)
        return self._weights[count]

    def by_item(self, count: int):
        """The same draws, items x resamples (an item's draws in one row)."""
        import numpy as np

        if count not in self._by_item:
            self._by_item[count] = np.ascontiguousarray(self.weights(count).T)
        return self._by_item[count]


class Resampler:
    """One set of bootstrap draws over ``items`` (response ids), shared by the figures."""

    def __init__(self, items: Sequence[int], seed: int = SEED, draws: Draws | None = None):
        self.index = {item: i for i, item in enumerate(items)}
        self.weights = (None if len(items) < 2 else draws.weights(len(items)) if draws
                        else resample_weights(len(items), resamples=RESAMPLES, seed=seed))
        self._codes: dict[int, tuple[dict, object]] = {}

    @classmethod
    def grouped(cls, groups, count: int, draws: Draws) -> Resampler:
        """Over ``count`` groups of items (``groups``: each item's group, every group with an
        item), the items' contributions being those of their group: a group's weight in a
        resample is the sum of its items' draws (exact integers, held as float64 so the
        weighted sums need no conversion)."""
        import numpy as np

        boot = cls([])
        boot.index = {g: g for g in range(count)}
        if len(groups) >= 2:
            order = np.argsort(groups, kind="stable")
            bounds = np.searchsorted(groups[order], np.arange(count + 1)).tolist()
            rows = draws.by_item(len(groups))[order]
            summed = np.empty((count, rows.shape[1]), dtype=np.int64)
            for group in range(count):  # a slice's sum: 5x faster than np.add.reduceat here
                summed[group] = rows[bounds[group]:bounds[group + 1]].sum(axis=0)
            boot.weights = np.ascontiguousarray(summed.T, dtype=np.float64)
        return boot

    def cells(self, a: dict, b: dict, item_of=None):
        """Per item, the counts of each confusion cell of A (reference) vs B: only A's keys
        among the items count, so B may hold more than A's keys. The maps must not change
        once compared (each is read into an array once)."""
        import numpy as np

        if item_of is not None:  # several keys per item (a reviewer's criteria)
            return cells_per_item(self.index, a, b, item_of)
        first, second = self._coded(a), self._coded(b)
        both = (first >= 0) & (second >= 0)
        counts = np.zeros((len(self.index), 4), dtype=np.int64)
        rows = np.flatnonzero(both)
        counts[rows, first[rows] * 2 + second[rows]] = 1
        return counts

    def _coded(self, verdicts: dict):
        """The map's verdict per item: 0 MET, 1 UNMET, -1 neither or absent (a map the
        figures compare many times is read once; the map is kept so its id stays its own)."""
        import numpy as np

        held = self._codes.get(id(verdicts))
        if held is not None and held[0] is verdicts:
            return held[1]
        codes = np.full(len(self.index), -1, dtype=np.int8)
        index = self.index
        for key, verdict in verdicts.items():
            code = _CODE.get(verdict)
            if code is not None and key in index:
                codes[index[key]] = code
        self._codes[id(verdicts)] = (verdicts, codes)
        return codes

    def sums(self, contributions) -> list[list] | None:
        """Per resample, the weighted sums of per-item contributions (an items x k array)."""
        if self.weights is None:
            return None
        return weighted_sums(self.weights, contributions)

    def interval(self, contributions, statistic,
                 on_arrays: Mapping | None = None) -> Interval | None:
        """``on_arrays``: the statistics computed on every resample at once (``ON_ARRAYS``)."""
        if self.weights is None:
            return None
        figure = (ON_ARRAYS if on_arrays is None else on_arrays).get(statistic)
        if figure is not None:  # every resample at once: the same floats (pair_scores_array)
            values = pair_scores_array(weighted_sums_array(self.weights, contributions))
            return percentile_interval_array(values[figure], resamples=RESAMPLES)
        rows = self.sums(contributions)
        return percentile_interval([statistic(*row) for row in rows], resamples=RESAMPLES)


def cells_per_item(index: Mapping, a: Mapping, b: Mapping, item_of):
    """Per item of ``index`` (item -> row), the confusion cells of A's keys against B, the
    keys of an item (``item_of(key)``) summed."""
    import numpy as np

    at = []
    for key, first in a.items():
        cell = _CELL.get((first, b.get(key)))
        if cell is not None:
            at.append(index[item_of(key)] * 4 + cell)
    return np.bincount(np.array(at, dtype=np.int64), minlength=len(index) * 4).reshape(-1, 4)


def kappa(*cells: int) -> float | None:
    return pair_scores(*cells)[1]


def f1(*cells: int) -> float | None:
    return pair_scores(*cells)[4]


def percent(*cells: int) -> float | None:
    return pair_scores(*cells)[0]


# The statistics above by their place in pair_scores, computed on all resamples at once.
ON_ARRAYS = {percent: 0, kappa: 1, f1: 4}


def alpha_units(boot: Resampler, people: dict[str, dict[int, Verdict]], keys):
    """Per response, alpha's sums: (values, MET values, MET x UNMET / (values - 1),
    pairable unit)."""
    import numpy as np

    sums = np.zeros((len(boot.index), 4), dtype=np.float64)
    for rid, i in boot.index.items():
        values = [people[k][rid] for k in keys if people[k].get(rid) in _DECIDED]
        if len(values) >= 2:
            met = values.count(Verdict.MET)
            unmet = len(values) - met
            sums[i] = (len(values), met, met * unmet / (len(values) - 1), 1)
    return sums


def alpha_of(values: float, met: float, observed: float, units: float) -> float | None:
    if units < 2:
        return None
    return alpha_value(round(values), round(met), observed)


def pooled_pairs(boot: Resampler, people: dict[str, dict[int, Verdict]], keys):
    """Per response, (agreeing pairs, pairs) over every two reviewers."""
    import numpy as np

    sums = np.zeros((len(boot.index), 2), dtype=np.int64)
    for a, b in combinations(keys, 2):
        cells = boot.cells(people[a], people[b])
        sums[:, 0] += cells[:, 0] + cells[:, 3]
        sums[:, 1] += cells.sum(axis=1)
    return sums


def pooled_percent(agree: int, total: int) -> float | None:
    return 100.0 * agree / total if total else None


def mean_f1_interval(boot: Resampler, per_left: list) -> Interval | None:
    """The judge's leave-one-out figure on each resample: the mean of its macro-F1 against
    each left-out reviewer's reference, over those where it is defined."""
    if boot.weights is None or not per_left:
        return None
    import numpy as np

    # sum(defined) / len(defined) per resample, summed in the same order as one at a time
    total = np.zeros(len(boot.weights))
    count = np.zeros(len(boot.weights), dtype=np.int64)
    for cells in per_left:
        scores = pair_scores_array(weighted_sums_array(boot.weights, cells))[4]
        has = ~np.isnan(scores)
        total = np.where(has, total + scores, total)
        count += has
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(count > 0, total / count, np.nan)
    return percentile_interval_array(mean, resamples=RESAMPLES)


def weighted_compare(a: Mapping, b: Mapping, sizes: Sequence[int],
                     outside: Mapping | None = None) -> PairwiseAgreement:
    """``compare_verdicts(a, b)`` of maps keyed by group, a group counting as its ``sizes``;
    ``outside``: B's verdicts on items outside the groups (verdict -> count)."""
    counts: Counter = Counter()
    for group, first in a.items():  # None is no verdict, as in compare_verdicts
        if first is not None:
            counts[first, b.get(group)] += sizes[group]
    for group, second in b.items():
        if second is not None and a.get(group) is None:
            counts[None, second] += sizes[group]
    for second, n in (outside or {}).items():
        counts[None, second] += n
    return compare_counts(counts)

