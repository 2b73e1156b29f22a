"""Pairwise order effect (grading.trust.pairwise_order): the pull towards the response shown
first and position consistency, per pair-criterion asked in both orders, checked against
statsmodels' Wilson interval and simulated judges with a known pull."""

from __future__ import annotations

import random

import pytest
from statsmodels.stats.proportion import proportion_confint

from grading.trust.figures import Figure
from grading.trust.pairwise_order import MIN_UNITS, pairwise_order
from grading.trust.verdict import pairwise_phrase


def test_a_judge_always_preferring_the_first_shown_is_caught_with_an_honest_interval():
    order = pairwise_order([("A", "A")] * 12)
    low, high = proportion_confint(12, 12, alpha=0.05, method="wilson")
    assert order.first_shown_share == 1.0
    assert order.first_shown.value == pytest.approx(0.5)
    assert (order.first_shown.low, order.first_shown.high) == (pytest.approx(low - 0.5),
                                                               pytest.approx(high - 0.5))
    assert 0 < order.first_shown.low < order.first_shown.high  # not a point
    assert order.consistency.value == 0.0 and order.consistency.high > 0
    assert (order.units, order.both_first, order.both_second) == (12, 12, 0)
    assert pairwise_phrase(order.first_shown).startswith(
        "first-shown response favoured in comparisons: +0.50 share of picks")


def test_a_content_driven_judge_has_no_pull_and_full_consistency():
    answers = [("A", "B"), ("B", "A"), ("TIE", "TIE")] * 5
    order = pairwise_order(answers)
    assert order.first_shown_share == 0.5 and order.first_shown.n == 10  # ties pick no side
    assert order.first_shown.low < 0 < order.first_shown.high
    assert order.consistency.value == 1.0 and order.consistency.n == 15
    low, _high = proportion_confint(15, 15, alpha=0.05, method="wilson")
    assert order.consistency.low == pytest.approx(low)
    assert pairwise_phrase(order.first_shown) == (
        "no pairwise order effect detected (n=10)")


def test_fractional_shares_match_statsmodels_wilson_and_failed_answers_are_left_out():
    answers = ([("A", "A")] * 6 + [("A", "B")] * 8 + [("B", "B")] * 2 + [("B", "A")] * 4
               + [(None, "A"), ("CANNOT_ASSESS", "B"), ("A", "TIE")])
    order = pairwise_order(answers)
    # picks of the first shown: 2 per (A, A), 1 per (A, B) and (B, A), 0 per (B, B)
    successes = (2 * 6 + 8 + 4) / 2
    low, high = proportion_confint(successes, 20, alpha=0.05, method="wilson")
    assert order.first_shown.n == 20 and order.first_shown_share == pytest.approx(0.6)
    assert (order.first_shown.low, order.first_shown.high) == (pytest.approx(low - 0.5),
                                                               pytest.approx(high - 0.5))
    # consistency: (A, B) and (B, A) are the same preference; (A, TIE) counts, unanswered not
    assert order.units == 21 and order.consistency.value == pytest.approx(12 / 21)


def test_too_few_pairs_is_cant_tell_yet():
    order = pairwise_order([("A", "A")] * (MIN_UNITS - 1))
    assert not order.enough and order.first_shown.n == MIN_UNITS - 1
    assert order.first_shown_share == 1.0 and order.consistency.value is None
    assert pairwise_phrase(order.first_shown) == (
        f"pairwise order: can't tell yet (n={MIN_UNITS - 1}; need about {MIN_UNITS})")
    assert pairwise_phrase(None) is None
    assert pairwise_order([]).first_shown == Figure(None, None, None, 0)


def _judge(seed: int, units: int, pull: float):
    """Prefers the better response (a coin per pair) but, with probability ``pull`` per
    answer, whatever is shown first."""
    rng = random.Random(seed)
    found = []
    for _ in range(units):
        better = rng.choice("AB")
        first = "A" if rng.random() < pull else better
        second = "A" if rng.random() < pull else {"A": "B", "B": "A"}[better]
        found.append((first, second))
    return found


def test_without_a_pull_the_interval_covers_zero_at_least_95_percent_of_the_time():
    covered = sum((lambda f: f.low <= 0 <= f.high)(pairwise_order(_judge(s, 80, 0)).first_shown)
                  for s in range(200))
    assert covered / 200 >= 0.95


def test_an_injected_pull_is_found():
    order = pairwise_order(_judge(3, 200, 0.3))
    # expected share of first-shown picks: 0.5 + pull / 2
    assert order.first_shown.low > 0
    assert order.first_shown.low <= 0.15 <= order.first_shown.high
