"""Is the judge swayed by response length? The slope of its verdict on length.

y is the judge's verdict as a number (MET 1, UNMET 0; on a multi-choice criterion the chosen
option's value), x the response's length in thousands of characters. The slope is the
ordinary least squares slope of y on x **within strata**: with the human verdict as the
stratum (responses people reviewed), it is the slope of ``y ~ x + C(human verdict)`` —
the length effect among responses people judged alike, so a judge that favours long answers
only because long answers are better is not flagged. With one stratum it is the plain slope
(association, not bias: longer answers may simply be better).

    slope = sum_s Sxy_s / sum_s Sxx_s,  Sxy_s = sum over stratum s of (x - mean_s x)(y - mean_s y)

The 95% interval is a percentile bootstrap over responses (strata resampled with them).
No figure (None) when the verdict never varies within a stratum: nothing measures an effect.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from grading.trust.figures import Figure, SharedDraws, percentile
from grading.trust.packed import pack

PER = 1000.0  # characters: the slope is per 1,000 characters


@dataclass(frozen=True)
class LengthBias:
    slope: Figure  # change of y per 1,000 characters
    controlled: bool  # True: within human-verdict strata
    strata: int


def _features(x, y, strata: Sequence[Hashable]):
    import numpy as np

    labels = sorted(set(strata), key=str)
    index = {s: i for i, s in enumerate(labels)}
    which = (None if len(labels) == 1
             else np.array([index[s] for s in strata]))
    return _columns(x, y, which, len(labels)), len(labels)


def _columns(x, y, which, count: int):
    """Per stratum (``which``: each item's, None: one), its indicator and the indicator
    times x, y, x² and xy."""
    import numpy as np

    columns = []
    for i in range(count):
        inside = (np.ones(len(x)) if which is None else (which == i).astype(float))
        columns += [inside, inside * x, inside * y, inside * x * x, inside * x * y]
    return np.column_stack(columns)


def _slopes(sums, strata: int):
    import numpy as np

    sxy = np.zeros(sums.shape[0])
    sxx = np.zeros(sums.shape[0])
    for s in range(strata):
        w, sx, sy, sxx_raw, sxy_raw = (sums[:, 5 * s + j] for j in range(5))
        with np.errstate(divide="ignore", invalid="ignore"):
            sxx += np.where(w > 0, sxx_raw - sx * sx / w, 0.0)
            sxy += np.where(w > 0, sxy_raw - sx * sy / w, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sxx > 1e-12, sxy / sxx, np.nan)


def length_slope(lengths: Sequence[float], values: Sequence[float],
                 strata: Sequence[Hashable] | None = None) -> LengthBias:
    """The within-strata slope of ``values`` on ``lengths`` (characters) per 1,000
    characters, with its bootstrap interval; ``strata`` None: one stratum."""
    draws = SharedDraws(len(values))
    return prepare_slope(lengths, values, strata, draws=draws, rows=range(len(values)))()


def prepare_slope(lengths: Sequence[float], values: Sequence[float],
                  strata: Sequence[Hashable] | None, *, draws: SharedDraws,
                  rows: Sequence[int]) -> Callable[[], LengthBias]:
    """``length_slope`` on ``draws`` shared with other figures: the items are at positions
    ``rows`` of the draws; call the result once every figure is prepared."""
    import numpy as np

    n = len(values)
    if len(lengths) != n or len(rows) != n or (strata is not None and len(strata) != n):
        raise ValueError("lengths, values and strata must be aligned")
    groups = list(strata) if strata is not None else [0] * n
    controlled = strata is not None
    if n < 3:
        return lambda: LengthBias(Figure(None, None, None, n), controlled, len(set(groups)))
    x = np.asarray(lengths, dtype=float) / PER
    centre = x.mean()
    x = x - centre  # centred: the sums below lose no precision to a large mean
    y = np.asarray(values, dtype=float)
    features, count = _features(x, y, groups)
    point = _slopes(features.sum(axis=0)[None, :], count)[0]
    # The same verdict (or value) for every response of each stratum: the slope is 0 on
    # every resample, and "+0.00 [+0.00, +0.00]" would claim a certainty no data gave.
    if strata is None:
        constant = bool(np.ptp(y) == 0)
    else:
        labels = np.asarray([str(g) for g in groups])
        constant = all(np.ptp(y[labels == label]) == 0 for label in set(labels.tolist()))
    if np.isnan(point) or constant:
        return lambda: LengthBias(Figure(None, None, None, n), controlled, count)
    # the draws make the columns of a part of the items when they need them (4 MB a
    # figure at 100,000 responses as float64, dozens of figures): the same floats from the
    # same lengths, values and strata, held packed until then (whole characters, a few
    # verdict values: ~0.5 MB a figure)
    index = {label: i for i, label in enumerate(sorted(set(groups), key=str))}
    which = None if count == 1 else pack([index[g] for g in groups])
    lengths_kept, y_kept = pack(lengths), pack(y)
    width = features.shape[1]
    del features, x, y

    def columns(part):
        return _columns(lengths_kept.unpack(part) / PER - centre, y_kept.unpack(part),
                        None if which is None else which.unpack(part), count)

    handle = draws.add(rows, columns, width=width)

    def finish() -> LengthBias:
        interval = percentile(_slopes(draws.sums(handle), count))
        return LengthBias(Figure(float(point), *(interval or (None, None)), n),
                          controlled, count)

    return finish
