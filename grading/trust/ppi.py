"""Prediction-powered inference for a mean (Angelopoulos et al., 2023, "Prediction-powered
inference", Science 382; the classical estimator of their section 2).

The judge's values f are known on all N responses; people's values y on n of them drawn at
random. The judge's mean alone is biased by exactly its average error; people's mean alone
has the width of n items. The estimate

    theta = mean(f over all N) + mean(y - f over the n sampled)

is unbiased (the second term, the "rectifier", removes the judge's average error), with
variance var(f)/N + var(y - f)/n and the normal 95% interval theta ± 1.96·sqrt(variance).
When the judge is good, y - f varies little and the interval is narrower than people's own.
The n sampled responses are part of the N (the paper draws them apart); with n much smaller
than N the difference is negligible, and the simulation in the tests checks the coverage.

A poor judge makes y - f vary *more* than y, and the classical interval wider than people's
own. The reported estimate is therefore the power-tuned one (PPI++, Angelopoulos, Duchi and
Zrnic, 2023): the judge's values enter with a weight lambda,

    theta_lambda = lambda·mean(f over all N) + mean(y - lambda·f over the n sampled)

unbiased for every lambda, with variance lambda²·var(f)/N + var(y - lambda·f)/n, smallest at
lambda = cov(y, f) / ((1 + n/N)·var(f)) estimated on the sample. lambda is kept in [0, 1]:
0 is people's mean alone (a judge that tells nothing), 1 the classical estimate above (kept as
``classical``). So the corrected interval is, up to the estimation of lambda, never wider than
people's own nor than the classical one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from grading.trust.figures import Z95, Figure, mean, var


@dataclass(frozen=True)
class CorrectedMean:
    judge: Figure  # the judge's mean over all N (its interval ignores the judge's error)
    people: Figure  # people's mean on the random sample, with its own interval
    corrected: Figure  # the power-tuned (PPI++) estimate and interval
    judge_on_sample: float | None  # the judge's mean on the sampled responses
    classical: Figure | None = None  # lambda = 1; None without a sample
    power: float | None = None  # the judge's weight lambda in ``corrected``, 0..1


@dataclass(frozen=True)
class _Summary:
    """The count, mean and sample variance of the judge's values over all N, worked out
    once per estimate (each is needed by several of its figures)."""

    n: int
    mean: float | None  # None: no values
    var: float | None  # None: fewer than two values

    @classmethod
    def of(cls, values: Sequence[float]) -> _Summary:
        n = len(values)
        return cls(n, mean(values) if n else None, var(values) if n >= 2 else None)


def summarize(judge_all: Sequence[float]) -> _Summary:
    """The count, mean and variance of the judge's values over all N, for ``ppi_mean``'s
    ``summary``: worked out once while only people's values change."""
    return _Summary.of(judge_all)


def _mean_figure(values: Sequence[float], summary: _Summary | None = None) -> Figure:
    found = summary or _Summary.of(values)
    if found.n == 0:
        return Figure(None, None, None, 0)
    if found.n < 2:
        return Figure(found.mean, None, None, found.n)
    half = Z95 * math.sqrt(found.var / found.n)
    return Figure(found.mean, found.mean - half, found.mean + half, found.n)


def power(judge_all: _Summary, judge_sample: Sequence[float],
          people_sample: Sequence[float]) -> float:
    """The variance-minimising weight of the judge, clipped to [0, 1] (0 when the judge's
    values do not vary: they carry nothing about people's)."""
    n, big_n = len(people_sample), judge_all.n
    var_f = judge_all.var
    if var_f == 0:
        return 0.0
    mean_y, mean_f = mean(people_sample), mean(judge_sample)
    cov = math.fsum((y - mean_y) * (f - mean_f) for y, f in
                    zip(people_sample, judge_sample, strict=True)) / (n - 1)
    return min(1.0, max(0.0, cov / ((1 + n / big_n) * var_f)))


def _estimate(judge_all: _Summary, judge_sample: Sequence[float],
              people_sample: Sequence[float], weight: float) -> Figure:
    n, big_n = len(people_sample), judge_all.n
    rectifier = [y - weight * f for y, f in zip(people_sample, judge_sample, strict=True)]
    theta = weight * judge_all.mean + mean(rectifier)
    if n < 2 or big_n < 2:
        return Figure(theta, None, None, n)
    half = Z95 * math.sqrt(weight ** 2 * judge_all.var / big_n + var(rectifier) / n)
    return Figure(theta, theta - half, theta + half, n)


def ppi_mean(judge_all: Sequence[float], judge_sample: Sequence[float],
             people_sample: Sequence[float], *,
             summary: _Summary | None = None) -> CorrectedMean:
    """The judge's mean, people's mean and the PPI++ and classical PPI estimates;
    ``judge_sample`` and ``people_sample`` are aligned (the judge's and people's value on each
    sampled response). Intervals are None below 2 sampled responses (and lambda is then 1:
    nothing to tune it on). ``summary``: ``summarize(judge_all)`` made earlier (then
    ``judge_all`` is not read)."""
    if len(judge_sample) != len(people_sample):
        raise ValueError(f"the sample's judge values ({len(judge_sample)}) and people's "
                         f"values ({len(people_sample)}) must be aligned")
    summary = _Summary.of(judge_all) if summary is None else summary
    judge = _mean_figure(judge_all, summary)
    people = _mean_figure(people_sample)
    n, big_n = len(people_sample), summary.n
    if n == 0 or big_n == 0:
        return CorrectedMean(judge, people, Figure(None, None, None, n),
                             mean(judge_sample) if judge_sample else None)
    classical = _estimate(summary, judge_sample, people_sample, 1.0)
    if n < 2 or big_n < 2:
        return CorrectedMean(judge, people, classical, mean(judge_sample), classical, 1.0)
    weight = power(summary, judge_sample, people_sample)
    return CorrectedMean(judge, people, _estimate(summary, judge_sample, people_sample, weight),
                         mean(judge_sample), classical, weight)
