"""The shape every trust figure has: a value, its 95% interval and the n behind it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from grading.memory import give_back

Z95 = NormalDist().inv_cdf(0.975)  # 1.959963984540054
RESAMPLES = 1000
SEED = 0


@dataclass(frozen=True)
class Figure:
    """``value`` with its 95% interval [low, high] (None: not enough data) over ``n`` items."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    @property
    def excludes_zero(self) -> bool:
        return self.low is not None and self.high is not None and (
            self.low > 0 or self.high < 0)

    def as_json(self) -> dict:
        return {"value": self.value, "ci95": None if self.low is None else [self.low, self.high],
                "n": self.n}


def mean(values) -> float:
    """The mean as ``math.fsum(values) / len(values)``; a numpy array of many values with
    few distinct ones (a judge's values at 100,000 responses) through ``_tally``."""
    if hasattr(values, "dtype"):
        tally = _tally(values)
        if tally is not None:
            return _exact_sum(*tally) / len(values)
        values = values.tolist()  # Python floats, as a list's
    values = values if isinstance(values, list | tuple) else list(values)
    return math.fsum(values) / len(values)


def var(values) -> float:
    """The sample variance (n - 1), in floats (statistics.variance is exact and slow)."""
    values = values if hasattr(values, "dtype") else list(values)
    if len(values) < 64:
        values = values.tolist() if hasattr(values, "dtype") else values
        centre = mean(values)
        return math.fsum((v - centre) ** 2 for v in values) / (len(values) - 1)
    # A judge's values are a few distinct numbers (MET 1 / UNMET 0, option values): each
    # squared deviation is worked out once, in the same float operations, and their exact
    # sum (fsum's, so order-free) is taken with each one's count.
    tally = _tally(values)
    if tally is not None:
        distinct, counts = tally
        centre = _exact_sum(distinct, counts) / len(values)  # == mean(values)
        squares = [(v - centre) ** 2 for v in distinct]
        return _exact_sum(squares, counts) / (len(values) - 1)
    import numpy as np

    centre = mean(values.tolist() if hasattr(values, "dtype") else values)
    distinct, inverse = np.unique(np.asarray(values, dtype=float), return_inverse=True)
    squares = np.asarray([(v - centre) ** 2 for v in distinct.tolist()], dtype=float)
    return math.fsum(squares[inverse].tolist()) / (len(values) - 1)


_FEW = 4096  # distinct values ``_tally`` counts (beyond: every value added on its own)


def _tally(values) -> tuple[list[float], list[int]] | None:
    """The distinct values and their counts of 64 or more finite values with at most
    ``_FEW`` distinct ones (and no -0.0: its sign would be lost); None otherwise."""
    import numpy as np

    found = np.asarray(values, dtype=float)
    if len(found) < 64 or not np.isfinite(found).all() or np.signbit(found[found == 0]).any():
        return None
    distinct, counts = np.unique(found, return_counts=True)
    if len(distinct) > _FEW:
        return None
    return distinct.tolist(), counts.tolist()


def _exact_sum(distinct: list[float], counts: list[int]) -> float:
    """``math.fsum`` of each value repeated its count times, the same float: the exact sum
    (a fraction) rounded once to the nearest float, as fsum rounds it."""
    from fractions import Fraction

    return float(sum((Fraction(v) * c for v, c in zip(distinct, counts, strict=True)),
                     Fraction(0)))


def wilson(successes: int, n: int) -> Figure:
    """A proportion with its Wilson score interval (grading.bootstrap.wilson_interval)."""
    from grading.bootstrap import wilson_interval

    interval = wilson_interval(successes, n)
    if interval is None:
        return Figure(None, None, None, 0)
    return Figure(successes / n, interval.low, interval.high, n)


def percentile(values, level: float = 0.95) -> tuple[float, float] | None:
    """The percentile interval of bootstrap values (NaN: undefined on that resample); None
    when fewer than half of them are defined."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    defined = np.sort(values[~np.isnan(values)])
    if len(defined) < max(2, len(values) // 2):
        return None
    tail = (1 - level) / 2
    low = defined[math.floor(tail * (len(defined) - 1))]
    high = defined[math.ceil((1 - tail) * (len(defined) - 1))]
    return float(low), float(high)


DRAW_CHUNK = 100  # resamples drawn per call of the generator before issue 41 (the stream)
PRODUCT_ROWS = 50  # resamples drawn, counted and multiplied at a time by ``SharedDraws``
DRAWN_ROWS = 10  # resamples drawn at a time by ``draw_counts`` (even: see there)
BIG_LAYOUT = 1 << 21  # columns x items (16 MB) from which the product goes by item parts
PASS_ROWS = 200  # resamples counted at a time (one byte a count) by the item parts' product
PART_ITEMS = 10_000  # items laid out and multiplied at a time by the item parts' product
WIDE = 48  # columns from which ``SharedDraws`` multiplies columns x items @ items x chunk
# the most counts (as floats: 8 MB) the single product holds at a time: PRODUCT_ROWS
# resamples up to 20,971 items, fewer beyond (10 at 100,000: not 40 MB, the trust tab's
# peak after a grade, session 47)
WHOLE_COUNTS = 1 << 20


def resample_weights(count: int, resamples: int = RESAMPLES, seed: int = SEED):
    """resamples x count draw counts as float64, ready to multiply: row r says how many
    times each item was drawn in resample r (numpy's PCG64 with ``seed``). The whole matrix
    (800 MB at 100,000 items): ``SharedDraws`` goes through the same rows a few at a time
    (``draw_counts``); this is their reference."""
    import numpy as np

    weights = np.empty((resamples, count), dtype="float64")
    for start, counts in draw_counts(count, resamples, seed):
        weights[start:start + len(counts)] = counts
    return weights


def draw_counts(count: int, resamples: int = RESAMPLES, seed: int = SEED,
                rows: int = PRODUCT_ROWS, dtype="float64"):
    """The rows of ``resample_weights``, ``rows`` resamples at a time (the last fewer):
    (first resample, its rows x count counts as ``dtype``; an integer type too small for a
    count raises OverflowError rather than wrap).

    The stream is the one a call per ``DRAW_CHUNK`` resamples drew: numpy draws a range
    below 2**32 from the 64-bit words two 32-bit halves at a time, whatever the integer type
    asked for, and a call that draws an odd number leaves the last word's second half
    unused. So a ``DRAW_CHUNK``'s call is made as calls of an even number of rows
    (``DRAWN_ROWS``: no half left) and the rest, which ends where the one call ended; each
    call's rows are counted before the next is drawn (issue 41: a chunk's draws were held
    beside its counts, 20 MB at 100,000 items; 4 MB now, as fast)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    small = np.int32 if count <= np.iinfo(np.int32).max else np.int64
    dtype = np.dtype(dtype)
    limit = np.iinfo(dtype).max if dtype.kind in "iu" else None
    rows = max(1, rows)
    counts, filled, first = None, 0, 0
    for start in range(0, resamples, DRAW_CHUNK):
        chunk = min(DRAW_CHUNK, resamples - start)
        for at in range(0, chunk, DRAWN_ROWS):  # an even number of draws but the last
            drawn = rng.integers(0, count, dtype=small,
                                 size=(min(DRAWN_ROWS, chunk - at), count))
            for row in drawn:
                if counts is None:
                    counts, filled = np.empty((min(rows, resamples - first), count),
                                              dtype=dtype), 0
                counted = np.bincount(row, minlength=count)
                if limit is not None and counted.max() > limit:
                    raise OverflowError(f"an item drawn {counted.max()} times in one "
                                        f"resample does not fit {dtype.name}")
                counts[filled] = counted
                filled += 1
                if filled == len(counts):
                    yield first, counts
                    first += filled
                    counts = None  # not held while the next are made (40 MB at 100,000)
            del drawn, row  # (the row is a view of the draws)


class SharedDraws:
    """One set of bootstrap draws over ``count`` items shared by many figures, summed in
    one matrix product: each figure adds the per-item columns its statistic is a function
    of (``add``, at the positions of its items), then ``sums`` gives each its resamples x
    columns sums. A report's figures over the same responses cost one draw and one product
    instead of one each.

    Memory stays flat in the items (issue 41). Under ``big`` columns x items cells the
    columns are laid out once, from what each figure registered, and multiplied by the
    counts ``PRODUCT_ROWS`` resamples at a time, fewer over more items (``WHOLE_COUNTS``;
    ``draw_counts``: never the resamples x items matrix, 800 MB at 100,000 items). From
    ``big`` on (160 columns over 100,000 responses: 128 MB of columns beside 40 MB of
    counts, the trust tab's peak) the product goes by parts: ``PASS_ROWS`` resamples are
    counted at a time in one byte a count, and for each ``PART_ITEMS`` items the columns of
    those items are laid out and multiplied by their counts, the parts' products added, the
    counts taken as floats ``PRODUCT_ROWS`` resamples at a time (~37 MB in all; the columns
    are made once per pass, as fast as one layout of every item was). A figure may register
    a function of a part of its items that makes their columns, called then, rather than the
    columns (not held: 4 MB a figure at 100,000 items).

    Each sum is an item's count times its value, added over the items as one product adds
    them: below ``big`` bit for bit the single product's at 100,000 items; by parts, and
    wherever the linear algebra library orders a small product otherwise, the additions
    come in another order: within 1e-12 of the sum of the terms' magnitudes."""

    def __init__(self, count: int, resamples: int = RESAMPLES, seed: int = SEED,
                 big: int = BIG_LAYOUT) -> None:
        self.count, self.resamples, self.seed, self.big = count, resamples, seed, big
        self._blocks: list[tuple[object, object, int]] = []
        self._results: list | None = None

    def add(self, rows, features, width: int | None = None) -> int:
        """Register ``features`` (len(rows) x width) of the items at positions ``rows``:
        the array, or a function of a part of them that returns the part's rows (the part:
        a slice or an array of indexes into ``rows``; then ``width`` is needed)."""
        import numpy as np

        if self._results is not None:
            raise RuntimeError("every figure must be added before the sums are taken")
        if width is None:
            if callable(features):
                raise ValueError("a function of the features needs their width")
            width = features.shape[1]
        small = "int32" if self.count <= 2 ** 31 - 1 else "int64"
        self._blocks.append((np.asarray(rows, dtype=small), features, width))
        return len(self._blocks) - 1

    def sums(self, handle: int):
        if self._results is None:
            self._compute()
        return self._results[handle]

    def _compute(self) -> None:
        import numpy as np

        widths = [width for _r, _f, width in self._blocks]
        summed = np.zeros((self.resamples, sum(widths)))
        if sum(widths) and self.count:
            if self.count * sum(widths) >= self.big:
                # the pages freed while the figures were prepared go back before the
                # counts are made (issue 41: ~25 MB of the trust tab's peak at 100,000)
                give_back()
                self._by_parts(summed)
            else:
                self._whole(summed)
        self._blocks = []
        self._results, at = [], 0
        for width in widths:
            self._results.append(summed[:, at:at + width])
            at += width

    def _whole(self, summed) -> None:
        columns = self._layout()
        wide = len(columns) >= WIDE
        rows = max(1, min(PRODUCT_ROWS, WHOLE_COUNTS // self.count))
        for start, counts in draw_counts(self.count, self.resamples, self.seed, rows=rows):
            # the same sums either way round; OpenBLAS takes a fraction of the time this
            # way round on many columns and a thin chunk of resamples, the other on few
            summed[start:start + len(counts)] = (
                (columns @ counts.T).T if wide else counts @ columns.T)
            del counts  # let go before the generator makes the next chunk's

    def _by_parts(self, summed) -> None:
        import numpy as np

        width = summed.shape[1]
        wide = width >= WIDE
        placed, at = [], 0  # per block: its positions in order, their order, where it goes
        for rows, features, w in self._blocks:
            features = features if callable(features) else np.asarray(features)
            if len(rows) < 2 or bool(np.all(rows[1:] >= rows[:-1])):
                placed.append((rows, None, features, w, at))
            else:
                order = np.argsort(rows, kind="stable")
                placed.append((rows[order], order, features, w, at))
            at += w
        self._blocks = []
        parts = [(lo, min(self.count, lo + PART_ITEMS))
                 for lo in range(0, self.count, PART_ITEMS)]
        for start, counts in draw_counts(self.count, self.resamples, self.seed,
                                         rows=PASS_ROWS, dtype="uint8"):
            into = summed[start:start + len(counts)]
            for lo, hi in parts:
                columns = np.zeros((width, hi - lo))
                for keyed, order, features, w, at in placed:
                    a, b = np.searchsorted(keyed, (lo, hi))
                    if a == b:
                        continue
                    part = slice(a, b) if order is None else order[a:b]
                    found = features(part) if callable(features) else features[part]
                    columns[at:at + w, keyed[a:b] - lo] = np.asarray(found).T
                # the part's counts as floats PRODUCT_ROWS resamples at a time (4 MB at
                # 10,000 items, not the pass's 16 MB: the trust tab's peak, session 46)
                for row in range(0, len(counts), PRODUCT_ROWS):
                    drawn = counts[row:row + PRODUCT_ROWS, lo:hi].astype("float64")
                    into[row:row + len(drawn)] += ((columns @ drawn.T).T if wide
                                                   else drawn @ columns.T)
                    del drawn
                del columns
            del counts, into

    def _layout(self):
        """columns x items of every block (zero where a block has no item), each block let
        go (or its function called) as it is laid out."""
        import numpy as np

        columns = np.zeros((sum(width for _r, _f, width in self._blocks), self.count))
        at = 0
        for i, (rows, features, width) in enumerate(self._blocks):
            self._blocks[i] = (None, None, width)
            found = features(slice(None)) if callable(features) else features
            columns[at:at + width, rows] = np.asarray(found).T
            at += width
        return columns


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution function (``df`` may be fractional: Welch)."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile by bisection on ``t_cdf`` (scipy is only a test dependency)."""
    if p == 0.5:
        return 0.0
    low, high = -1.0, 1.0
    while t_cdf(low, df) > p:
        low *= 2.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-12:
            break
    return (low + high) / 2.0
