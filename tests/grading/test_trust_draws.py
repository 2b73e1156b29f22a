"""Shared bootstrap draws: many figures summed in one product give each its own sums."""

import numpy as np
import pytest

from grading.trust.figures import SharedDraws, resample_weights, wilson
from grading.trust.length_bias import length_slope, prepare_slope


def test_shared_draws_give_each_block_the_sums_of_its_own_items():
    draws = SharedDraws(6, resamples=50, seed=3)
    first = draws.add([0, 2, 5], np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    second = draws.add([1, 2], np.array([[7.0], [8.0]]))
    weights = resample_weights(6, 50, 3)
    full = np.zeros((6, 3))
    full[[0, 2, 5], :2] = [[1, 2], [3, 4], [5, 6]]
    full[[1, 2], 2] = [7, 8]
    assert np.allclose(draws.sums(first), (weights @ full)[:, :2])
    assert np.allclose(draws.sums(second), (weights @ full)[:, 2:])
    assert weights.sum(axis=1).tolist() == [6.0] * 50  # each resample draws 6 items
    with pytest.raises(RuntimeError, match="before the sums"):
        draws.add([0], np.array([[1.0]]))


def test_a_slope_on_shared_draws_matches_the_slope_alone():
    rng = np.random.default_rng(0)
    lengths = rng.uniform(0, 4000, 200)
    values = (rng.random(200) < 0.3 + lengths / 10000).astype(float)
    alone = length_slope(lengths, values)
    draws = SharedDraws(300)
    rows = rng.permutation(300)[:200]
    shared = prepare_slope(lengths, values, None, draws=draws, rows=rows)()
    assert shared.slope.value == pytest.approx(alone.slope.value)
    assert shared.slope.low < shared.slope.value < shared.slope.high
    # other draws, same data: the interval moves a little, not a lot
    assert shared.slope.low == pytest.approx(alone.slope.low, abs=0.03)


def test_wilson_interval_hand_computed():
    figure = wilson(8, 10)
    assert figure.value == pytest.approx(0.8)
    assert figure.low == pytest.approx(0.4902, abs=1e-4)
    assert figure.high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 0).value is None
