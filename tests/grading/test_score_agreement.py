"""Score agreement checked against scipy.stats and numpy (test-only dependencies)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from grading.score_agreement import ScoreAgreement, compare_scores


def generate_scores(
    seed: int, size: int, *, correlation: float, decimals: int | None, missing_rate: float
) -> tuple[list[float | None], list[float | None]]:
    """B follows A with the given strength plus noise; rounding makes ties."""
    rng = random.Random(seed)
    a: list[float | None] = []
    b: list[float | None] = []
    for _ in range(size):
        x = rng.random()
        y = correlation * x + (1 - abs(correlation)) * rng.random()
        if decimals is not None:
            x, y = round(x, decimals), round(y, decimals)
        a.append(None if rng.random() < missing_rate else x)
        b.append(None if rng.random() < missing_rate else y)
    return a, b


@pytest.mark.parametrize(
    ("seed", "size", "correlation", "decimals", "missing_rate"),
    [
        pytest.param(seed, *case, id="n{}-corr{}-decimals{}-missing{}".format(*case))
        for seed, case in enumerate([
            (2, 0.5, None, 0.0),
            (3, 0.9, None, 0.0),
            (10, 0.0, None, 0.0),
            (10, -0.8, 1, 0.0),
            (50, 0.7, 1, 0.1),
            (100, 0.95, 2, 0.2),
            (300, 0.3, None, 0.05),
            (40, 1.0, None, 0.0),
            (40, -1.0, 1, 0.0),
        ])
    ],
)
def test_score_agreement_matches_scipy_and_numpy_on_generated_scores(
    seed, size, correlation, decimals, missing_rate
):
    a, b = generate_scores(seed, size, correlation=correlation, decimals=decimals,
                           missing_rate=missing_rate)
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    xs, ys = np.array([x for x, _ in pairs]), np.array([y for _, y in pairs])

    result = compare_scores(a, b)

    assert result.pairs_used == len(pairs) >= 2
    assert result.pearson == pytest.approx(pearsonr(xs, ys).statistic, abs=1e-12)
    assert result.spearman == pytest.approx(spearmanr(xs, ys).statistic, abs=1e-12)
    assert result.mean_absolute_difference == pytest.approx(np.mean(np.abs(ys - xs)))
    assert result.mean_signed_difference == pytest.approx(np.mean(ys - xs))
    assert result.note == ""


def test_spearman_gives_tied_scores_their_average_rank():
    a = [1.0, 2.0, 2.0, 2.0, 3.0, 5.0]
    b = [0.5, 0.7, 0.1, 0.7, 0.7, 0.9]

    assert compare_scores(a, b).spearman == pytest.approx(spearmanr(a, b).statistic)


def test_bias_is_positive_when_source_b_scores_higher():
    result = compare_scores({"r1": 0.2, "r2": 0.5}, {"r1": 0.6, "r2": 0.7})

    assert result.mean_signed_difference == pytest.approx(0.3)
    assert compare_scores([0.6, 0.7], [0.2, 0.5]).mean_signed_difference == pytest.approx(-0.3)


def test_only_scores_present_in_both_sources_are_paired():
    result = compare_scores(
        {"r1": 0.1, "r2": 0.4, "r3": 0.9, "r4": None}, {"r2": 0.5, "r3": 0.7, "r4": 0.1, "r5": 1.0}
    )

    assert (result.pairs_used, result.only_in_a, result.only_in_b) == (2, 1, 2)
    assert result.mean_absolute_difference == pytest.approx(0.15)


@pytest.mark.parametrize(
    ("a", "b", "expected", "note"),
    [
        pytest.param([], [], {"pairs_used": 0, "mean_absolute_difference": None,
                              "mean_signed_difference": None},
                     "no pairs to compare", id="empty"),
        pytest.param({"r1": 0.3}, {"r2": 0.4}, {"pairs_used": 0, "only_in_a": 1,
                                                "mean_signed_difference": None},
                     "no pairs to compare", id="no-overlap"),
        pytest.param([0.3], [0.5], {"pairs_used": 1, "mean_signed_difference": 0.2,
                                    "mean_absolute_difference": 0.2},
                     "correlation undefined: it needs at least 2 pairs, found 1", id="one-pair"),
        pytest.param([0.5, 0.5, 0.5], [0.1, 0.4, 0.9], {"mean_signed_difference": -0.1 / 3},
                     "source A's scores are all 0.5 (zero variance)", id="constant-a"),
        pytest.param([0.1, 0.4, 0.9], [1.0, 1.0, 1.0], {"pairs_used": 3},
                     "source B's scores are all 1 (zero variance)", id="constant-b"),
        pytest.param([0.7, 0.7], [0.7, 0.7], {"mean_absolute_difference": 0.0},
                     "source A's scores are all 0.7, source B's scores are all 0.7",
                     id="both-constant-and-equal"),
    ],
)
def test_degenerate_scores_give_none_correlations_with_a_note(a, b, expected, note):
    result = compare_scores(a, b)

    assert (result.pearson, result.spearman) == (None, None)
    assert note in result.note
    assert {name: getattr(result, name) for name in expected} == pytest.approx(expected)


def test_scipy_agrees_that_constant_scores_have_no_correlation():
    with pytest.warns(Warning):
        reference = pearsonr([0.5, 0.5, 0.5], [0.1, 0.4, 0.9]).statistic

    assert math.isnan(reference)
    assert compare_scores([0.5, 0.5, 0.5], [0.1, 0.4, 0.9]).pearson is None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param([1e-200, 2e-200, 4e-200], [1.0, 2.0, 3.0], id="tiny-scores"),
        pytest.param([1e200, -1e200, 3e200], [1.0, 0.0, 3.0], id="huge-scores"),
        pytest.param([-3.0, 12.5, 7.0, 7.0], [-1.0, 10.0, 2.0, 9.0], id="raw-weighted-sums"),
    ],
)
def test_correlations_stay_finite_and_match_scipy_at_extreme_magnitudes(a, b):
    result = compare_scores(a, b)

    assert result.pearson == pytest.approx(pearsonr(a, b).statistic, abs=1e-9)
    assert result.spearman == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)


@pytest.mark.parametrize(
    "bad",
    [pytest.param(math.nan, id="nan"), pytest.param(math.inf, id="infinity")],
)
def test_a_non_finite_score_is_an_error_not_a_missing_value(bad):
    with pytest.raises(ValueError, match="finite"):
        compare_scores([0.1, bad], [0.2, 0.3])


def test_sequences_of_different_lengths_are_rejected():
    with pytest.raises(ValueError, match="same length"):
        compare_scores([0.1, 0.2], [0.1])


def test_score_results_are_frozen():
    result = compare_scores([0.1, 0.2], [0.3, 0.4])

    assert isinstance(result, ScoreAgreement)
    with pytest.raises(AttributeError):
        result.pearson = 0.0  # type: ignore[misc]
