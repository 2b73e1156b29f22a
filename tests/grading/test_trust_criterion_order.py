"""Criterion-order effect (grading.trust.criterion_order): late minus early, checked against
statsmodels' Welch z interval and against simulated judges with a known injected effect."""

from __future__ import annotations

import random

import numpy as np
import pytest
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


def test_option_values_are_means_with_welchs_interval_as_statsmodels_gives_it():
    rng = random.Random(4)
    values = [0.0, 0.25, 0.5, 0.75, 1.0]
    seen = [(p, 4, rng.choice(values[:4] if p <= 2 else values[1:]))
            for p in (rng.randint(1, 4) for _ in range(120))]
    early = np.array([v for p, _k, v in seen if p <= 2])
    late = np.array([v for p, _k, v in seen if p > 2])
    low, high = CompareMeans(DescrStatsW(late), DescrStatsW(early)).zconfint_diff(
        alpha=0.05, usevar="unequal")
    figure = order_effect(seen).late_minus_early
    assert figure.value == pytest.approx(late.mean() - early.mean())
    assert (figure.low, figure.high) == (pytest.approx(low), pytest.approx(high))
    assert figure.n == 120


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
    assert order_phrase([early_days]) == "criterion order: can't tell yet (n=12)"
    assert order_phrase([unsure, early_days]) == "no criterion-order effect detected (n=80)"
    assert order_phrase([lower, unsure]) == (
        "accurate judged lower when listed late: -0.20 MET rate late vs early "
        "[-0.30 to -0.10] (n=80)")
    text = verdict(agreement=None, samples=1, noisy=[], stability_measured=0, slopes=[],
                   positions=[], orders=[early_days])
    assert text.endswith("criterion order: can't tell yet (n=12)")
