"""Stability across samples: Fleiss' kappa against statsmodels, flip rate, the noisy flag."""

import random

import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from grading.trust.stability import NOISY_VARIANCE, count_table, fleiss_kappa, stability


@pytest.mark.parametrize("seed", range(6))
def test_fleiss_kappa_matches_statsmodels_on_random_tables(seed):
    rng = random.Random(seed)
    raters = rng.randint(2, 5)
    categories = rng.randint(2, 4)
    table = []
    for _ in range(rng.randint(5, 60)):
        row = [0] * categories
        for _ in range(raters):
            # skewed towards category 0 so the tables are not all noise
            row[0 if rng.random() < 0.5 else rng.randrange(categories)] += 1
        table.append(row)
    expected = sm_fleiss_kappa(np.array(table), method="fleiss")
    assert fleiss_kappa(table) == pytest.approx(expected, abs=1e-12)


def test_fleiss_kappa_is_none_when_every_rating_is_one_category():
    assert fleiss_kappa([[3, 0], [3, 0]]) is None
    assert fleiss_kappa([]) is None
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[2, 0], [1, 2]])


def test_stability_counts_flips_and_flags_noise():
    steady = {i: ["MET", "MET", "MET"] if i % 2 else ["UNMET"] * 3 for i in range(40)}
    result = stability(steady)
    assert result.flip_rate.value == 0 and result.flip_rate.n == 40
    assert result.fleiss_kappa.value == pytest.approx(1.0)
    assert result.noisy is False and result.mean_variance == 0
    # one response in four flips once over three samples: variance 2/9 each -> 0.056 > 0.05
    shaky = {i: (["MET", "UNMET", "MET"] if i % 4 == 0 else ["MET"] * 3 if i % 2
                 else ["UNMET"] * 3) for i in range(40)}
    noisy = stability(shaky)
    assert noisy.flip_rate.value == pytest.approx(0.25)
    assert noisy.flip_rate.low < 0.25 < noisy.flip_rate.high
    assert noisy.mean_variance == pytest.approx(0.25 * 2 / 9)
    assert noisy.noisy is True and noisy.threshold == NOISY_VARIANCE
    table, _ = count_table(list(shaky.values()))
    assert noisy.fleiss_kappa.value == pytest.approx(
        sm_fleiss_kappa(np.array(table), method="fleiss"))
    assert noisy.fleiss_kappa.low <= noisy.fleiss_kappa.value <= noisy.fleiss_kappa.high


def test_stability_needs_two_samples():
    result = stability({1: ["MET"], 2: ["UNMET"]})
    assert result.noisy is None and result.flip_rate.value is None


def test_the_kappa_interval_covers_the_true_kappa_about_95_percent_of_the_time():
    """A simulation with known truth: each response is MET with probability 0.1 or 0.9 (half
    each), asked 3 times. Two samples of one response agree with probability 0.82, two of
    any responses 0.5 (chance), so Fleiss' kappa in the population is (0.82 - 0.5) / 0.5."""
    rng = np.random.default_rng(3)
    truth = (0.82 - 0.5) / 0.5
    covered, runs = 0, 300
    for _ in range(runs):
        p = np.where(rng.random(150) < 0.5, 0.1, 0.9)
        drawn = rng.random((150, 3)) < p[:, None]
        result = stability({i: ["MET" if x else "UNMET" for x in row]
                            for i, row in enumerate(drawn)})
        covered += result.fleiss_kappa.low <= truth <= result.fleiss_kappa.high
    # 95% nominal; a percentile bootstrap on 150 responses runs a little under it
    assert 0.91 <= covered / runs <= 0.99, covered / runs
