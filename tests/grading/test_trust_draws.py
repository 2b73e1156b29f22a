"""Shared bootstrap draws: many figures summed in one product give each its own sums."""

import numpy as np
import pytest

from grading.trust.figures import SharedDraws, draw_counts, resample_weights, wilson
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


def _one_matrix_weights(count: int, resamples: int, seed: int):
    """The draw counts as the trust report made them before issue 41: one resamples x count
    matrix, each chunk's draws counted through one offset bincount (the oracle)."""
    rng = np.random.default_rng(seed)
    weights = np.empty((resamples, count), dtype="float64")
    for start in range(0, resamples, 100):
        rows = min(100, resamples - start)
        draws = rng.integers(0, count, size=(rows, count))
        flat = (draws + (np.arange(rows) * count)[:, None]).ravel()
        weights[start:start + rows] = np.bincount(flat, minlength=rows * count).reshape(
            rows, count)
    return weights


@pytest.mark.parametrize(("count", "resamples", "seed"), [
    pytest.param(1, 7, 0, id="one item"),
    pytest.param(7, 1000, 0, id="odd count"),
    pytest.param(300, 250, 5, id="resamples not a multiple of the draw chunk"),
    pytest.param(4_001, 1000, 11, id="thousands of items"),
])
def test_chunked_draw_counts_are_the_single_matrix_counts(count, resamples, seed):
    expected = _one_matrix_weights(count, resamples, seed)
    assert np.array_equal(resample_weights(count, resamples, seed), expected)
    got = np.full_like(expected, -1.0)
    for start, counts in draw_counts(count, resamples, seed, rows=9):
        got[start:start + len(counts)] = counts
    assert np.array_equal(got, expected)


@pytest.mark.parametrize(("count", "widths"), [
    pytest.param(50, (5, 4), id="small"),
    pytest.param(3_000, (5, 5, 4, 1), id="thousands"),
    pytest.param(2_000, (5,) * 12, id="many columns"),
    # fewer than PRODUCT_ROWS resamples at a time (WHOLE_COUNTS: 34 over 30,000 items)
    pytest.param(30_000, (3, 2), id="more items than the product's rows hold at once"),
])
def test_chunked_sums_are_the_single_product(count, widths):
    """Bit-identical where the linear algebra library takes the same path for a chunk of
    resamples as for all of them (large products); otherwise only the order of the
    additions may differ: within 1e-12 of the sum of the terms' magnitudes."""
    rng = np.random.default_rng(2)
    draws = SharedDraws(count, resamples=300, seed=4)
    blocks = []
    for width in widths:
        rows = np.sort(rng.permutation(count)[:count * 3 // 4])
        features = rng.normal(size=(len(rows), width)) * 1000
        blocks.append((draws.add(rows, features), rows, features))
    weights = _one_matrix_weights(count, 300, 4)
    for handle, rows, features in blocks:
        full = np.zeros((count, features.shape[1]))
        full[rows] = features
        expected, scale = weights @ full, weights @ np.abs(full)
        assert np.all(np.abs(draws.sums(handle) - expected) <= 1e-12 * scale)


def test_a_figure_may_register_a_function_of_its_columns():
    """Called once, when the sums are taken, for every item: the sums of the columns it
    returns."""
    rng = np.random.default_rng(8)
    rows = np.sort(rng.permutation(500)[:300])
    features = rng.normal(size=(300, 5))
    calls = []
    lazy, eager = SharedDraws(500, resamples=200), SharedDraws(500, resamples=200)
    handle = lazy.add(rows, lambda part: calls.append(part) or features[part], width=5)
    assert eager.add(rows, features) == handle
    assert calls == []
    assert np.array_equal(lazy.sums(handle), eager.sums(handle))
    lazy.sums(handle)
    assert calls == [slice(None)]
    with pytest.raises(ValueError, match="width"):
        SharedDraws(5).add([0], lambda part: features)


def _blocks_of(draws, count, widths, seed, lazy=False, shuffled=False):
    rng = np.random.default_rng(seed)
    blocks = []
    for i, width in enumerate(widths):
        rows = rng.permutation(count)[:count * 3 // 4 if i % 2 else count - 7]
        rows = rows if shuffled else np.sort(rows)
        features = rng.normal(size=(len(rows), width)) * 1000
        given = (lambda part, f=features: f[part]) if lazy else features
        blocks.append((draws.add(rows, given, width=width), rows, features))
    return blocks


@pytest.mark.parametrize(("count", "widths", "lazy", "shuffled"), [
    pytest.param(25_003, (5,) * 12, True, False, id="many columns, functions, in order"),
    pytest.param(21_000, (5, 4, 1), False, True, id="few columns, arrays, out of order"),
    pytest.param(9_999, (3, 2), True, True, id="fewer items than a part"),
])
def test_the_product_by_parts_gives_the_single_products_sums(count, widths, lazy, shuffled):
    """From ``big`` cells on, the product goes by parts of the items with one-byte counts:
    the sums of the single product (the draws' reference), the additions in another
    order only: within 1e-12 of the sum of the terms' magnitudes."""
    by_parts = SharedDraws(count, resamples=250, seed=6, big=1)
    blocks = _blocks_of(by_parts, count, widths, 1, lazy, shuffled)
    weights = resample_weights(count, 250, 6)
    for handle, rows, features in blocks:
        full = np.zeros((count, features.shape[1]))
        full[rows] = features
        expected, scale = weights @ full, weights @ np.abs(full)
        got = by_parts.sums(handle)
        assert got.shape == expected.shape
        assert np.all(np.abs(got - expected) <= 1e-12 * scale)


def test_the_product_by_parts_is_used_from_big_on_and_asks_for_parts():
    """A function of the columns is asked for a part of its items at a time (as many
    times as there are passes and parts); below ``big`` once for all of them."""
    count, rows = 23_000, np.arange(0, 23_000, 2)
    asked = []

    def columns(part):
        asked.append(part)
        return np.ones((len(rows[part]), 1))

    by_parts = SharedDraws(count, resamples=300, big=1)
    handle = by_parts.add(rows, columns, width=1)
    sums = by_parts.sums(handle)
    assert len(asked) == 2 * 3  # 2 passes of 200 resamples x 3 parts of 10,000 items
    assert sorted({len(rows[p]) for p in asked}) == [1500, 5000]
    assert np.array_equal(sums[:, 0], resample_weights(count, 300, 0)[:, rows].sum(axis=1))
    whole = SharedDraws(count, resamples=300)  # 11,500 cells: below the default
    handle = whole.add(rows, columns, width=1)
    asked.clear()
    assert np.array_equal(whole.sums(handle), sums)  # whole counts: exact in any order
    assert asked == [slice(None)]


def test_one_byte_counts_are_the_float_counts():
    """The product by parts counts in one byte (an item is drawn about once a resample;
    a count that does not fit raises instead of wrapping around)."""
    got = np.concatenate([c for _s, c in draw_counts(255, 40, 3, rows=7, dtype="uint8")])
    assert got.dtype == np.uint8
    assert np.array_equal(got, resample_weights(255, 40, 3))
    got = np.concatenate([c for _s, c in draw_counts(30_000, 120, 3, rows=200,
                                                      dtype="uint8")])
    assert np.array_equal(got, resample_weights(30_000, 120, 3))


def test_draw_counts_hold_little_beside_the_counts_they_yield():
    """Issue 41: a chunk's draws are not held beside its counts (at 100,000 items, 50
    resamples' int32 draws were 20 MB beside their 40 MB of counts)."""
    import tracemalloc

    count, rows = 20_000, 50
    chunk = rows * count * 8  # the counts yielded: 8 MB
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        for _start, counts in draw_counts(count, 100, 0, rows=rows):
            del counts
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < chunk + chunk // 4  # the counts and a few rows' draws (16.6 MB before)


@pytest.mark.parametrize("strata", [False, True], ids=["one stratum", "human strata"])
def test_a_length_slope_by_parts_is_the_slope_of_the_single_product(strata):
    """The length slope's columns made a part of its responses at a time, from its packed
    lengths and verdicts (the product by parts, as at 100,000 responses): the figure of
    the single product, within the float sums' last bits."""
    rng = np.random.default_rng(4)
    count = 23_456
    rows = np.sort(rng.permutation(30_000)[:count])
    lengths = rng.integers(50, 9000, count).astype(float)
    values = (rng.random(count) < 0.2 + lengths / 20_000).astype(float)
    groups = rng.choice(["MET", "UNMET"], count).tolist() if strata else None
    found = []
    for big in (1, 10 ** 12):
        draws = SharedDraws(30_000, resamples=300, big=big)
        found.append(prepare_slope(lengths, values, groups, draws=draws, rows=rows)())
    by_parts, whole = found
    assert by_parts.strata == whole.strata == (2 if strata else 1)
    assert by_parts.slope.value == whole.slope.value  # the point: no draws
    assert by_parts.slope.low == pytest.approx(whole.slope.low, rel=1e-9)
    assert by_parts.slope.high == pytest.approx(whole.slope.high, rel=1e-9)
    assert whole.slope.low < whole.slope.value < whole.slope.high
