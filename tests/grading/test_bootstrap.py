"""The percentile bootstrap behind the intervals shown next to agreement figures."""

from __future__ import annotations

import random

import numpy as np
import pytest

from grading.bootstrap import bootstrap_interval, resample_weights, weighted_sums


def test_interval_of_a_mean_matches_numpy_percentiles_on_the_same_draws():
    source = random.Random(3)
    values = [source.gauss(10, 2) for _ in range(80)]

    def mean(indices):
        return sum(values[i] for i in indices) / len(indices)

    interval = bootstrap_interval(len(values), mean, resamples=500, seed=11)
    rng = random.Random(11)
    draws = [mean([rng.randrange(80) for _ in range(80)]) for _ in range(500)]
    assert interval.low == pytest.approx(np.percentile(draws, 2.5, method="lower"))
    assert interval.high == pytest.approx(np.percentile(draws, 97.5, method="higher"))
    assert interval.low < mean(range(80)) < interval.high
    assert interval.resamples == 500 and interval.undefined == 0


def test_same_seed_same_interval():
    def stat(indices):
        return float(sum(indices))

    assert bootstrap_interval(20, stat, seed=4) == bootstrap_interval(20, stat, seed=4)


def test_undefined_resamples_are_counted_and_too_many_give_no_interval():
    labels = [1] * 9 + [0]

    def only_when_mixed(indices):
        picked = {labels[i] for i in indices}
        return 1.0 if len(picked) == 2 else None

    interval = bootstrap_interval(10, only_when_mixed, resamples=400, seed=2)
    assert interval is not None and interval.undefined > 0
    assert interval.resamples + interval.undefined == 400
    assert bootstrap_interval(10, lambda _: None) is None
    assert bootstrap_interval(1, lambda _: 1.0) is None


@pytest.mark.parametrize("kwargs", [{"level": 1.0}, {"level": 0}, {"resamples": 0}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        bootstrap_interval(5, lambda _: 1.0, **kwargs)


@pytest.mark.parametrize("count, resamples", [(7, 123), (300, 1000)])
def test_resample_weights_count_the_draws_of_one_seeded_stream(count, resamples):
    """Made in chunks of a small type, the weights are exactly the counts of one call's
    draws (the stream the baseline's intervals are checked against)."""
    weights = resample_weights(count, resamples=resamples, seed=9)
    draws = np.random.default_rng(9).integers(0, count, size=(resamples, count))
    expected = np.zeros((resamples, count), dtype=np.int64)
    np.add.at(expected, (np.arange(resamples)[:, None], draws), 1)
    assert (weights == expected).all()
    contributions = np.arange(count * 3, dtype=np.int64).reshape(count, 3)
    assert weighted_sums(weights, contributions) == (expected @ contributions).tolist()


@pytest.mark.parametrize("scale", [1, 2 ** 40])
def test_integer_sums_are_the_exact_integers_whichever_way_they_are_multiplied(scale):
    """Integer contributions go through float64 BLAS only while every sum stays an exact
    integer below 2**53 (scale 1); past that (2**40 per cell) in integer arithmetic: both
    equal the sums made one integer at a time."""
    from grading.bootstrap import weighted_sums_array

    rng = np.random.default_rng(3)
    weights = resample_weights(2_000, resamples=300, seed=4)
    contributions = rng.integers(0, 5, size=(2_000, 4)).astype(np.int64) * scale
    found = weighted_sums_array(weights, contributions)
    expected = np.einsum("ri,ik->rk", weights.astype(object), contributions.astype(object))
    assert found.dtype == np.int64
    assert (found.astype(object) == expected).all()


def test_resample_weights_at_ten_thousand_items_hold_two_bytes_per_draw_count():
    """The baseline holds one such array per criterion: 1,000 x 10,000 int64 was 80 MB."""
    weights = resample_weights(10_000, resamples=1000, seed=0)
    assert weights.nbytes <= 2 * 10_000 * 1000
    assert (weights.sum(axis=1) == 10_000).all()
