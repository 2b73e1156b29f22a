"""Results over many pairs: the win rate's bootstrap interval and the Bradley-Terry fit."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from grading import Criterion
from grading.pairwise.aggregation import aggregate_preferences, winner
from grading.pairwise.bradley_terry import fit, leaderboard
from grading.pairwise.report import CriterionPreference, PairReport
from grading.pairwise.summary import summarize

CRITERIA = [Criterion(name="accurate", requirement="Correct", weight=3),
            Criterion(name="safe", requirement="Unsafe advice", weight=-1)]


def report(*sides: tuple[str | None, bool | None]) -> PairReport:
    """A pair's report from (preference, consistent) per criterion, scored as the grader does."""
    preferences = [CriterionPreference(criterion=c, preference=side, consistent=consistent,
                                       error=None if side else "the judge failed")
                   for c, (side, consistent) in zip(CRITERIA, sides, strict=True)]
    result = aggregate_preferences(preferences)
    return PairReport(preferences=preferences, score=result.score,
                      winner=winner(result.score))


def test_counts_win_rate_with_ties_as_half_and_consistency_per_criterion():
    reports = [report(("B", True), ("TIE", False)),
               report(("B", True), ("A", True)),
               report(("TIE", False), (None, None)),
               report(("A", True), ("CANNOT_ASSESS", True))]

    summary = summarize(reports, resamples=200)

    accurate, safe = summary.criteria
    assert (accurate.tally.wins, accurate.tally.ties, accurate.tally.losses) == (2, 1, 1)
    assert accurate.tally.win_rate == pytest.approx(2.5 / 4)
    assert (accurate.consistent, accurate.consistency_rate) == (3, 0.75)
    assert (safe.tally.judged, safe.failed, safe.cannot_assess) == (2, 1, 1)
    assert safe.tally.win_rate == pytest.approx(0.25)
    # overall by winner: B (3+0.5 of 4), B (3 of 4), TIE (only accurate scored), A
    assert [r.winner for r in reports] == ["B", "B", "TIE", "A"]
    assert summary.overall.win_rate == pytest.approx(2.5 / 4)
    assert summary.consistency_rate == pytest.approx(4 / 6)  # 3 of 4 and 1 of 2 judged
    assert accurate.tally.interval.low <= 0.625 <= accurate.tally.interval.high


def test_a_few_pairs_that_all_went_one_way_never_get_a_zero_width_interval():
    from statsmodels.stats.proportion import proportion_confint

    summary = summarize([report(("B", True), ("B", True))] * 3, resamples=200)

    accurate = summary.criteria[0]
    low, high = proportion_confint(3, 3, alpha=0.05, method="wilson")
    # 3 of 3 won: the bootstrap has nothing to resample; Wilson's interval says how little
    # three pairs show
    assert (accurate.tally.interval.low, accurate.tally.interval.high) == (
        pytest.approx(low), pytest.approx(high))
    assert accurate.tally.interval.low < 0.5
    assert (accurate.consistency_interval.low, accurate.consistency_interval.high) == (
        pytest.approx(low), pytest.approx(high))
    assert summary.overall.interval.low == pytest.approx(low)


def test_the_consistency_interval_is_wilsons_for_its_count():
    from statsmodels.stats.proportion import proportion_confint

    reports = [report(("B", n % 4 != 0), ("A", True)) for n in range(20)]

    interval = summarize(reports, resamples=200).criteria[0].consistency_interval

    low, high = proportion_confint(15, 20, alpha=0.05, method="wilson")
    assert (interval.low, interval.high) == (pytest.approx(low), pytest.approx(high))


def test_the_win_rate_interval_covers_the_true_rate_in_a_simulation():
    # B wins 55 %, ties 20 %, loses 25 %: true win rate 0.55 + 0.20 / 2 = 0.65.
    truth, covered, runs = 0.65, 0, 40
    for run in range(runs):
        rng = random.Random(run)
        sides = rng.choices(["B", "TIE", "A"], weights=[55, 20, 25], k=200)
        summary = summarize([report((s, True), ("TIE", True)) for s in sides],
                            resamples=400, seed=run)
        interval = summary.criteria[0].tally.interval
        covered += interval.low <= truth <= interval.high
        assert interval.high - interval.low < 0.2
    assert covered / runs >= 0.85  # nominal 95 %


def test_same_reports_and_seed_give_the_same_intervals():
    reports = [report((s, True), ("B", False)) for s in ["A", "B", "B", "TIE", "B"] * 4]
    assert summarize(reports, seed=3) == summarize(reports, seed=3)


def test_bradley_terry_two_sources_hand_checked():
    # a beats b twice, loses once: p_a / p_b = 2, centred log-strengths +-ln(2)/2
    strengths = fit([("a", "b", 0), ("a", "b", 0), ("b", "a", 0)], prior=0)
    assert strengths["a"] == pytest.approx(math.log(2) / 2)
    assert strengths["b"] == pytest.approx(-math.log(2) / 2)


def test_bradley_terry_ties_count_half_and_a_balanced_cycle_is_even():
    assert fit([("a", "b", 0.5), ("a", "b", 0.5)], prior=0) == pytest.approx(
        {"a": 0.0, "b": 0.0})
    cycle = [("a", "b", 0), ("b", "c", 0), ("c", "a", 0)]  # a>b, b>c, c>a
    assert fit(cycle, prior=0) == pytest.approx({"a": 0.0, "b": 0.0, "c": 0.0}, abs=1e-9)


def test_bradley_terry_matches_the_maximum_likelihood_found_by_scipy():
    from scipy.optimize import minimize

    rng = np.random.default_rng(7)
    names = ["p", "q", "r", "s"]
    comparisons = [(names[i], names[j], float(rng.choice([0, 0.5, 1])))
                   for i in range(4) for j in range(4) if i != j for _ in range(5)]
    index = {n: k for k, n in enumerate(names)}

    def negative_log_likelihood(theta):
        total = 0.0
        for a, b, outcome in comparisons:
            diff = theta[index[b]] - theta[index[a]]
            total -= outcome * diff - np.logaddexp(0, diff)  # log P(b wins) weighted
        return total

    best = minimize(negative_log_likelihood, np.zeros(4), method="BFGS").x
    best -= best.mean()
    fitted = fit(comparisons, names, prior=0)
    assert [fitted[n] for n in names] == pytest.approx(list(best), abs=1e-4)


def test_bradley_terry_recovers_known_strengths_with_intervals_covering_them():
    truth = {"best": 1.2, "good": 0.4, "fair": -0.3, "weak": -1.3}
    rng = np.random.default_rng(11)
    names = list(truth)
    comparisons = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for _ in range(150):
                p_b = 1 / (1 + math.exp(truth[a] - truth[b]))
                first, second = (a, b) if rng.random() < 0.5 else (b, a)
                b_won = rng.random() < p_b
                outcome = float(b_won) if first == a else float(not b_won)
                comparisons.append((first, second, outcome))

    board = leaderboard(comparisons, resamples=100, seed=1)

    assert [s.source for s in board] == names
    assert [s.rank for s in board] == [1, 2, 3, 4]
    for standing in board:
        assert standing.strength == pytest.approx(truth[standing.source], abs=0.25)
        assert standing.interval.low <= truth[standing.source] <= standing.interval.high
        assert standing.comparisons == 450
    assert board[0].win_probability > 0.5 > board[-1].win_probability


def test_a_source_that_lost_everything_still_has_a_finite_strength_with_the_prior():
    comparisons = [("a", "b", 1), ("a", "c", 1), ("b", "c", 1)] * 3
    strengths = fit(comparisons)
    assert strengths["c"] > strengths["b"] > strengths["a"]
    assert all(math.isfinite(v) for v in strengths.values())
    with pytest.raises(ValueError, match="no finite strength"):
        fit(comparisons, prior=0)
