"""Criterion-order effect (grading.trust.criterion_order): late minus early, checked against
statsmodels' Newcombe and Welch t intervals, scipy's t quantile, and simulated judges with a
known injected effect."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from grading.trust.criterion_order import MIN_PER_GROUP, half, order_effect
from grading.trust.figures import Figure
from grading.trust.verdict import Named, order_phrase, verdict


@pytest.mark.parametrize(("position", "listed", "expected"), [
    pytest.param(1, 2, "early", id="two-first"),
    pytest.param(2, 2, "late", id="two-second"),
    pytest.param(2, 3, None, id="three-middle"),
    pytest.param(3, 3, "late", id="three-last"),
    pytest.param(2, 4, "early", id="four-second"),
    pytest.param(3, 4, "late", id="four-third"),
    pytest.param(1, 1, None, id="alone"),
])
def test_early_and_late_halves(position, listed, expected):
    assert half(position, listed) == expected


def _simulate(seed: int, responses: int, listed: int, base: float, late_shift: float):
    """A judge whose MET rate on one criterion is ``base`` when listed early and
    ``base + late_shift`` when listed late; the criterion's place is a fresh shuffle."""
    rng = random.Random(seed)
    seen = []
    for _ in range(responses):
        position = rng.randint(1, listed)
        p = base + (late_shift if half(position, listed) == "late" else 0.0)
        seen.append((position, listed, 1.0 if rng.random() < p else 0.0))
    return seen


def test_a_met_rate_difference_and_interval_match_statsmodels_newcombe():
    seen = _simulate(1, 200, 5, 0.7, -0.2)
    effect = order_effect(seen)
    early = np.array([v for p, k, v in seen if half(p, k) == "early"])
    late = np.array([v for p, k, v in seen if half(p, k) == "late"])
    low, high = confint_proportions_2indep(int(late.sum()), len(late), int(early.sum()),
                                           len(early), method="newcomb", compare="diff")
    figure = effect.late_minus_early
    assert figure.value == pytest.approx(late.mean() - early.mean())
    assert (figure.low, figure.high) == (pytest.approx(low), pytest.approx(high))
    assert figure.n == len(early) + len(late) < 200  # the middle position is in neither
    assert (effect.early.value, effect.early.n) == (pytest.approx(early.mean()), len(early))
    assert (effect.late.value, effect.late.n) == (pytest.approx(late.mean()), len(late))
    assert effect.listed == 5 and effect.enough


def test_an_injected_effect_is_found_and_covered():
    effect = order_effect(_simulate(2, 600, 4, 0.75, -0.25))
    figure = effect.late_minus_early
    assert figure.high < 0 and figure.low <= -0.25 <= figure.high


def test_without_an_effect_the_interval_covers_zero_about_95_percent_of_the_time():
    covered = sum(
        (lambda f: f.low <= 0 <= f.high)(order_effect(_simulate(s, 150, 4, 0.6, 0.0))
                                         .late_minus_early)
        for s in range(300))
    assert 0.92 <= covered / 300 <= 0.98


def _ratings(seed: int, n: int, shift: float):
    """Positions 1-4 of 4 with a rating on 1-5 (skewed towards 4), ``shift`` added late."""
    rng = random.Random(seed)
    seen = []
    for _ in range(n):
        p = rng.randint(1, 4)
        value = rng.choices([1, 2, 3, 4, 5], weights=[1, 2, 3, 6, 3])[0]
        seen.append((p, 4, min(5.0, value + (shift if p > 2 else 0.0))))
    return seen


def test_option_values_use_welchs_t_with_floored_variances_as_scipy_gives_it():
    """Option values (changed from a normal interval, which shrinks to a point when a half
    has no spread): Welch's t with each half's variance at least that with one more value
    at each end of the scale; Satterthwaite's degrees of freedom; scipy's t quantile."""
    seen = _ratings(4, 60, 0.0)
    early = np.array([v for p, _k, v in seen if p <= 2])
    late = np.array([v for p, _k, v in seen if p > 2])
    scale = (1.0, 5.0)

    def floored(x):
        return max(x.var(ddof=1), np.append(x, scale).var(ddof=1)) / len(x)

    a, b = floored(late), floored(early)
    dof = (a + b) ** 2 / (a ** 2 / (len(late) - 1) + b ** 2 / (len(early) - 1))
    half_width = stats.t.ppf(0.975, dof) * math.sqrt(a + b)
    diff = late.mean() - early.mean()
    figure = order_effect(seen, scale=scale).late_minus_early
    assert figure.value == pytest.approx(diff)
    assert (figure.low, figure.high) == (pytest.approx(diff - half_width),
                                         pytest.approx(diff + half_width))
    assert figure.n == 60


def test_with_many_spread_out_ratings_the_floor_barely_moves_statsmodels_welch_t():
    seen = _ratings(5, 2000, 0.0)
    early = np.array([v for p, _k, v in seen if p <= 2])
    late = np.array([v for p, _k, v in seen if p > 2])
    low, high = CompareMeans(DescrStatsW(late), DescrStatsW(early)).tconfint_diff(
        alpha=0.05, usevar="unequal")
    figure = order_effect(seen, scale=(1.0, 5.0)).late_minus_early
    assert figure.low <= low and figure.high >= high  # never narrower
    assert (figure.high - figure.low) <= 1.05 * (high - low)


def test_identical_ratings_in_both_halves_keep_an_honest_interval():
    """Three ratings of 3 early and three late: no spread yet is not no spread (a normal
    interval said "+0.00 [+0.00, +0.00]")."""
    seen = [(1, 2, 3.0)] * 3 + [(2, 2, 3.0)] * 3
    figure = order_effect(seen, min_per_group=3, scale=(1.0, 5.0)).late_minus_early
    assert figure.value == 0.0
    assert figure.low < -1.0 and figure.high > 1.0
    # without the scale, the values seen (at least one unit apart) floor it
    assert order_effect(seen, min_per_group=3).late_minus_early.high > 0.5


def test_an_injected_rating_shift_is_covered_about_95_percent_of_the_time():
    covered = sum(
        (lambda f: f.low <= -0.5 <= f.high)(
            order_effect(_ratings(s, 120, -0.5), scale=(1.0, 5.0)).late_minus_early)
        for s in range(300))
    assert 0.93 <= covered / 300 <= 0.995


@pytest.mark.parametrize(("late_hits", "early_hits"), [
    pytest.param(0, 20, id="never-late-always-early"),
    pytest.param(20, 20, id="always-met"),
])
def test_rates_of_0_or_1_keep_an_honest_interval(late_hits, early_hits):
    """A judge that always says MET (or never) in a half has no variance there: the
    interval must not shrink to a point."""
    seen = ([(1, 2, 1.0)] * early_hits + [(1, 2, 0.0)] * (20 - early_hits)
            + [(2, 2, 1.0)] * late_hits + [(2, 2, 0.0)] * (20 - late_hits))
    figure = order_effect(seen).late_minus_early
    low, high = confint_proportions_2indep(late_hits, 20, early_hits, 20,
                                           method="newcomb", compare="diff")
    assert (figure.low, figure.high) == (pytest.approx(low), pytest.approx(high))
    assert figure.high - figure.low > 0.2


def test_too_few_in_a_half_is_cant_tell_yet():
    few = [(1, 2, 1.0)] * 30 + [(2, 2, 0.0)] * (MIN_PER_GROUP - 1)
    effect = order_effect(few)
    assert not effect.enough and effect.late_minus_early.value is None
    assert effect.late_minus_early.n == 30 + MIN_PER_GROUP - 1
    assert (effect.early.n, effect.late.n) == (30, MIN_PER_GROUP - 1)
    assert effect.early.value == 1.0 and effect.late.value == 0.0
    assert order_effect([]).early.value is None


def test_the_sentence_says_only_what_the_interval_supports():
    lower = Named("accurate", Figure(-0.2, -0.3, -0.1, 80))
    unsure = Named("brief", Figure(0.05, -0.1, 0.2, 80))
    early_days = Named("tone", Figure(None, None, None, 12))
    assert order_phrase([]) is None
    assert order_phrase([early_days]) == (
        "criterion order: can't tell yet (n=12; need about 10 in each half)")
    assert order_phrase([unsure, early_days]) == "no criterion-order effect detected (n=80)"
    assert order_phrase([lower, unsure]) == (
        "accurate judged lower when listed late: -0.20 MET rate late vs early "
        "[-0.30 to -0.10] (n=80)")
    text = verdict(agreement=None, samples=1, noisy=[], stability_measured=0, slopes=[],
                   positions=[], orders=[early_days])
    assert text.endswith("criterion order: can't tell yet (n=12; need about 10 in each half)")
