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
    corrected: Figure  # the prediction-powered estimate and interval
    judge_on_sample: float | None  # the judge's mean on the sampled responses


def _mean_figure(values: Sequence[float]) -> Figure:
    n = len(values)
    if n == 0:
        return Figure(None, None, None, 0)
    centre = mean(values)
    if n < 2:
        return Figure(centre, None, None, n)
    half = Z95 * math.sqrt(var(values) / n)
    return Figure(centre, centre - half, centre + half, n)


def ppi_mean(judge_all: Sequence[float], judge_sample: Sequence[float],
             people_sample: Sequence[float]) -> CorrectedMean:
    """The judge's mean, people's mean and the PPI estimate; ``judge_sample`` and
    ``people_sample`` are aligned (the judge's and people's value on each sampled response).
    The interval is None below 2 sampled responses."""
    if len(judge_sample) != len(people_sample):
        raise ValueError(f"the sample's judge values ({len(judge_sample)}) and people's "
                         f"values ({len(people_sample)}) must be aligned")
    judge = _mean_figure(judge_all)
    people = _mean_figure(people_sample)
    n, big_n = len(people_sample), len(judge_all)
    if n == 0 or big_n == 0:
        return CorrectedMean(judge, people, Figure(None, None, None, n),
                             mean(judge_sample) if judge_sample else None)
    errors = [y - f for y, f in zip(people_sample, judge_sample, strict=True)]
    theta = mean(judge_all) + mean(errors)
    if n < 2 or big_n < 2:
        return CorrectedMean(judge, people, Figure(theta, None, None, n), mean(judge_sample))
    half = Z95 * math.sqrt(var(judge_all) / big_n + var(errors) / n)
    return CorrectedMean(judge, people, Figure(theta, theta - half, theta + half, n),
                         mean(judge_sample))
