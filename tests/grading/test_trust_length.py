"""The length slope against statsmodels OLS, and a simulation: injected bias is found,
none is not."""

import random

import numpy as np
import pytest
import statsmodels.api as sm
from sklearn.linear_model import LinearRegression

from grading.trust.length_bias import length_slope


def _data(seed: int, n: int, bias_per_1000: float):
    """Truth (the human verdict) is more often MET on longer answers; the judge follows the
    truth, plus ``bias_per_1000`` per 1,000 characters of its own."""
    rng = random.Random(seed)
    lengths, human, judge = [], [], []
    for _ in range(n):
        length = rng.uniform(100, 4000)
        truth = 1 if rng.random() < 0.3 + 0.1 * length / 1000 else 0
        p_met = (0.85 if truth else 0.15) + bias_per_1000 * (length - 2000) / 1000
        lengths.append(length)
        human.append(truth)
        judge.append(1 if rng.random() < min(max(p_met, 0), 1) else 0)
    return lengths, judge, human


def test_slope_matches_ols_with_the_human_verdict_as_covariate():
    lengths, judge, human = _data(0, 300, 0.05)
    result = length_slope(lengths, judge, human)
    design = sm.add_constant(np.column_stack([np.array(lengths) / 1000, human]))
    fitted = sm.OLS(np.array(judge, dtype=float), design).fit()
    assert result.slope.value == pytest.approx(fitted.params[1], abs=1e-10)
    assert result.controlled and result.strata == 2 and result.slope.n == 300


def test_slope_without_strata_matches_scikit_learn():
    lengths, judge, _ = _data(1, 200, 0.0)
    result = length_slope(lengths, judge)
    model = LinearRegression().fit(np.array(lengths)[:, None] / 1000, judge)
    assert result.slope.value == pytest.approx(model.coef_[0], abs=1e-10)
    assert not result.controlled


def test_three_strata_match_ols_with_dummies():
    rng = random.Random(3)
    lengths = [rng.uniform(0, 3000) for _ in range(150)]
    strata = [rng.choice(["a", "b", "c"]) for _ in lengths]
    values = [rng.choice([0, 0.5, 1]) for _ in lengths]
    result = length_slope(lengths, values, strata)
    dummies = np.column_stack([[s == "b" for s in strata], [s == "c" for s in strata]])
    design = sm.add_constant(np.column_stack([np.array(lengths) / 1000, dummies]).astype(float))
    assert result.slope.value == pytest.approx(sm.OLS(values, design).fit().params[1])


def test_injected_length_bias_is_detected_and_none_mostly_is_not():
    detected = sum(
        length_slope(*_data(seed, 400, 0.06)).slope.low > 0 for seed in range(20))
    assert detected >= 17  # power: the bias is found nearly every time
    # no bias of the judge's own, but longer answers are truly better: controlled for the
    # human verdict the interval contains 0 about 95% of the time ...
    contains = sum(
        (lambda f: f.low <= 0 <= f.high)(length_slope(*_data(seed, 400, 0.0)).slope)
        for seed in range(100, 140))
    assert contains >= 34
    # ... while the plain slope (not controlled) sees the truth's own length effect
    uncontrolled = sum(
        length_slope(*_data(seed, 400, 0.0)[:2]).slope.low > 0 for seed in range(100, 120))
    assert uncontrolled >= 15


def test_slope_is_none_without_spread_in_length():
    result = length_slope([1000, 1000, 1000, 1000], [1, 0, 1, 0])
    assert result.slope.value is None and result.slope.n == 4
    with pytest.raises(ValueError, match="aligned"):
        length_slope([1, 2], [1])


def test_a_verdict_that_never_varies_gives_no_figure_not_a_zero_width_interval():
    lengths = [100.0 * (i + 1) for i in range(12)]
    always_met = length_slope(lengths, [1.0] * 12)
    assert (always_met.slope.value, always_met.slope.low, always_met.slope.n) == (None, None, 12)
    # within strata: the judge agrees with people every time, so inside each stratum its
    # verdict is constant — no within-stratum effect can be measured either
    humans = ["MET"] * 6 + ["UNMET"] * 6
    follows = length_slope(lengths, [1.0] * 6 + [0.0] * 6, humans)
    assert follows.slope.value is None and follows.controlled
    # one stratum varies: the figure is back
    varies = length_slope(lengths, [1.0, 0.0] * 3 + [0.0] * 6, humans)
    assert varies.slope.value is not None and varies.slope.low < varies.slope.high
