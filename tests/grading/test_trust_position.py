"""Position effect: the chosen option's shown position against chance."""

import random

import pytest
from statsmodels.stats.proportion import proportion_confint

from grading.trust.figures import Figure
from grading.trust.position import MIN_CHOICES, chosen_position, first_position_effect
from grading.trust.verdict import Named, length_phrase, position_phrase, verdict


def _choices(seed: int, n: int, k: int, pull: float):
    """The judge picks its favourite option; with probability ``pull`` it picks whatever
    is shown first instead."""
    rng = random.Random(seed)
    found = []
    for _ in range(n):
        order = list(range(k))
        rng.shuffle(order)
        chosen = order[0] if rng.random() < pull else rng.choice([0, 0, 1, k - 1])
        found.append((chosen_position(order, chosen), k))
    return found


def test_no_position_effect_under_uniform_shuffles():
    inside = sum(
        (lambda f: f.low <= 0 <= f.high)(first_position_effect(_choices(s, 300, 4, 0)).excess)
        for s in range(40))
    assert inside >= 35


def test_first_position_pull_is_detected():
    effect = first_position_effect(_choices(0, 300, 4, 0.3))
    assert effect.expected == pytest.approx(0.25)
    assert effect.excess.low > 0 and effect.excess.n == 300
    assert effect.first_rate == pytest.approx(effect.expected + effect.excess.value)


def test_hand_computed_position_case():
    effect = first_position_effect([(0, 2), (1, 2), (0, 4), (0, 4)])
    assert effect.first_rate == pytest.approx(0.75)
    assert effect.expected == pytest.approx((0.5 + 0.5 + 0.25 + 0.25) / 4)
    assert chosen_position([2, 0, 1], 1) == 2 and chosen_position([2, 0], 1) is None
    assert first_position_effect([]).excess.value is None


def test_verdict_never_claims_more_than_the_interval():
    slope = Named("Accuracy", Figure(0.12, 0.05, 0.19, 800))
    unsure = Named("Tone", Figure(0.04, -0.02, 0.10, 800))
    assert length_phrase([unsure]) == "no length effect detected (n=800)"
    assert length_phrase([slope, unsure]) == (
        "longer answers favoured on Accuracy: +0.12 MET rate per 1,000 characters "
        "[0.05 to 0.19] (n=800)")
    assert position_phrase([]) is None
    text = verdict(agreement=None, samples=3, noisy=[], stability_measured=10,
                   slopes=[unsure], positions=[])
    assert text == "stable across 3 samples; no length effect detected (n=800)"
    assert "noisy on Tone" in verdict(agreement=None, samples=2, noisy=["Tone"],
                                      stability_measured=5, slopes=[], positions=[])
    assert "not measured" in verdict(agreement=None, samples=1, noisy=[],
                                     stability_measured=0, slopes=[], positions=[])


@pytest.mark.parametrize(("first", "n", "k"), [
    pytest.param(20, 20, 2, id="always-first"),
    pytest.param(0, 12, 4, id="never-first"),
    pytest.param(7, 30, 3, id="some-first"),
])
def test_the_interval_is_wilsons_as_statsmodels_gives_it_and_never_a_point(first, n, k):
    """A normal interval from the per-choice differences shrank to a point when every
    choice went the same way (20 of 20 shown first: "+0.50 [+0.50, +0.50]")."""
    choices = [(0, k)] * first + [(1, k)] * (n - first)
    low, high = proportion_confint(first, n, alpha=0.05, method="wilson")
    excess = first_position_effect(choices).excess
    assert excess.value == pytest.approx(first / n - 1 / k)
    assert (excess.low, excess.high) == (pytest.approx(low - 1 / k), pytest.approx(high - 1 / k))
    assert excess.high - excess.low > 0.1 and excess.n == n


def test_below_the_minimum_it_is_cant_tell_yet():
    effect = first_position_effect([(0, 2)] * 3)
    assert not effect.enough and effect.excess.value is None and effect.excess.n == 3
    assert effect.first_rate == 1.0 and effect.expected == 0.5
    assert first_position_effect([(0, 2)] * MIN_CHOICES).enough
    assert position_phrase([Named("tone", effect.excess)]) == (
        f"option position: can't tell yet (n=3; need about {MIN_CHOICES})")


def test_grouped_choices_count_each_unit_once_as_statsmodels_wilson_gives_it():
    from statsmodels.stats.proportion import proportion_confint

    from grading.trust.position import grouped_position_effect

    units = [[(0, 2), (1, 2)], [(0, 2), (0, 2)], [(1, 4)], [(2, 4), (0, 4), (0, 4)]] * 5
    effect = grouped_position_effect(units)
    shares = [0.5, 1.0, 0.0, 2 / 3] * 5
    low, high = proportion_confint(sum(shares), len(shares), method="wilson")
    expected = sum([0.5, 0.5, 0.25, 0.25] * 5) / 20
    assert effect.excess.n == 20
    assert effect.first_rate == pytest.approx(sum(shares) / 20)
    assert effect.expected == pytest.approx(expected)
    assert (effect.excess.low, effect.excess.high) == pytest.approx(
        (low - expected, high - expected))
    # one choice per unit: exactly the ungrouped figure
    flat = [(0, 2), (1, 2), (0, 4), (0, 4)] * 3
    assert grouped_position_effect([[c] for c in flat]) == first_position_effect(flat)
