"""Agreement on multi-choice criteria checked against scikit-learn and the krippendorff package."""

from __future__ import annotations

import math
import random
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, f1_score

from grading import Criterion, CriterionOption, Verdict
from grading.bootstrap import percentile_interval
from grading.option_agreement import (
    OptionScale,
    alpha_interval,
    compare_options,
    kappa_interval,
    options_alpha,
)

LIKERT = Criterion(name="clarity", requirement="How clear?", options=[
    CriterionOption(label=str(i), value=(i - 1) / 4) for i in range(1, 6)]
    + [CriterionOption(label="N/A", value=0, na=True)])
TONE = Criterion(name="tone", requirement="Tone?", scale_type="nominal", options=[
    CriterionOption(label="formal", value=1.0), CriterionOption(label="n/a", value=0, na=True),
    CriterionOption(label="casual", value=0.5), CriterionOption(label="rude", value=0.0)])
ORDINAL, NOMINAL = OptionScale.of(LIKERT), OptionScale.of(TONE)
SKLEARN_WEIGHTS = {"ordinal": "quadratic", "nominal": None}


def random_sources(seed: int, scale: OptionScale, *, sources: int = 2, size: int = 60,
                   agreement: float = 0.6, abstain: float = 0.1, missing: float = 0.1):
    """Aligned label lists: each source copies a per-unit truth with probability
    ``agreement``, else picks any option; some NA/CANNOT_ASSESS and missing values."""
    rng = random.Random(seed)
    labels = list(scale.labels)
    na = [o.label for o in scale.options if o.na] + ["CANNOT_ASSESS"]
    out = [[] for _ in range(sources)]
    for _ in range(size):
        truth = rng.choice(labels)
        for column in out:
            roll = rng.random()
            if roll < missing:
                column.append(None)
            elif roll < missing + abstain:
                column.append(rng.choice(na))
            else:
                column.append(truth if rng.random() < agreement else rng.choice(labels))
    return out


def scored_pairs(a, b, scale):
    keep = [(x, y) for x, y in zip(a, b, strict=True)
            if x in scale.labels and y in scale.labels]
    return [x for x, _ in keep], [y for _, y in keep]


def sklearn_kappa(a, b, scale):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(a, b, labels=list(scale.labels),
                                  weights=SKLEARN_WEIGHTS[scale.scale_type])
    return None if math.isnan(value) else value


def reference_alpha(sources, scale):
    index = {label: i for i, label in enumerate(scale.labels)}
    data = [[index.get(v, np.nan) if v is not None else np.nan for v in s] for s in sources]
    return krippendorff.alpha(reliability_data=np.array(data, dtype=float),
                              value_domain=list(range(len(scale.labels))),
                              level_of_measurement=scale.scale_type)


CASES = [pytest.param(scale, seed, id=f"{scale.scale_type}-{seed}")
         for scale in (ORDINAL, NOMINAL) for seed in range(8)]


@pytest.mark.parametrize(("scale", "seed"), CASES)
def test_pairwise_figures_match_scikit_learn(scale, seed):
    a, b = random_sources(seed, scale, agreement=0.2 + 0.1 * seed)
    result = compare_options(a, b, scale)
    ya, yb = scored_pairs(a, b, scale)
    assert result.pairs_used == len(ya) > 0
    assert result.kappa == pytest.approx(sklearn_kappa(ya, yb, scale), abs=1e-12)
    assert result.metric == {"ordinal": "quadratic-weighted kappa",
                             "nominal": "Cohen's kappa"}[scale.scale_type]
    assert [list(r) for r in result.confusion.rows] == confusion_matrix(
        ya, yb, labels=list(scale.labels)).tolist()
    assert result.confusion.labels == scale.labels
    present = sorted(set(ya) | set(yb), key=scale.labels.index)
    assert result.macro_f1 == pytest.approx(f1_score(ya, yb, labels=present, average="macro"))
    assert result.percent_agreement == pytest.approx(
        100 * sum(x == y for x, y in zip(ya, yb, strict=True)) / len(ya))
    shared = sum(x is not None and y is not None for x, y in zip(a, b, strict=True))
    assert result.excluded_cannot_assess == shared - len(ya)
    assert result.only_in_a == sum(x is not None and y is None for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize(("scale", "seed"), CASES)
def test_alpha_matches_the_krippendorff_package(scale, seed):
    sources = random_sources(seed, scale, sources=2 + seed % 3, missing=0.25)
    result = options_alpha(sources, scale)
    assert result.alpha == pytest.approx(reference_alpha(sources, scale), abs=1e-12)
    assert result.metric == f"Krippendorff's alpha ({scale.scale_type})"
    assert result.excluded_cannot_assess == sum(
        v is not None and v not in scale.labels for s in sources for v in s)


def test_ordinal_figures_use_the_order_the_rubric_lists():
    # 1 vs 2 is a near miss, 1 vs 5 a far one: weighted kappa and ordinal alpha tell them
    # apart, and reversing the listing does not change them.
    near = compare_options(["1", "2", "3", "4", "5"] * 4, ["2", "1", "4", "3", "5"] * 4, ORDINAL)
    far = compare_options(["1", "2", "3", "4", "5"] * 4, ["5", "2", "3", "4", "1"] * 4, ORDINAL)
    assert near.kappa > far.kappa
    reversed_scale = OptionScale(tuple(reversed(LIKERT.options)), "ordinal")
    again = compare_options(["1", "2", "3", "4", "5"] * 4, ["2", "1", "4", "3", "5"] * 4,
                            reversed_scale)
    assert again.kappa == pytest.approx(near.kappa)
    assert again.confusion.labels == ("5", "4", "3", "2", "1")


def test_all_agree_on_several_options_is_perfect():
    a = ["1", "3", "5", "3", "1"]
    result = compare_options(a, a, ORDINAL)
    assert (result.kappa, result.percent_agreement, result.macro_f1) == (1.0, 100.0, 1.0)
    assert options_alpha([a, a, a], ORDINAL).alpha == pytest.approx(1.0)
    assert sklearn_kappa(a, a, ORDINAL) == pytest.approx(1.0)


@pytest.mark.parametrize("scale", [ORDINAL, NOMINAL], ids=["ordinal", "nominal"])
def test_one_option_everywhere_has_no_kappa_or_alpha_and_says_why(scale):
    only = scale.labels[1]
    result = compare_options([only] * 6, [only] * 6, scale)
    assert result.kappa is None and result.percent_agreement == 100.0
    assert f"every pair is {only!r} in both sources" in result.note
    assert sklearn_kappa([only] * 6, [only] * 6, scale) is None  # NaN there
    alpha = options_alpha([[only] * 6] * 3, scale)
    assert alpha.alpha is None and "every pairable verdict" in alpha.note
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the package divides 0 by 0
        assert math.isnan(reference_alpha([[only] * 6] * 3, scale))


def test_one_option_each_but_different_is_zero_as_in_scikit_learn():
    result = compare_options(["1"] * 5, ["4"] * 5, ORDINAL)
    assert result.kappa == pytest.approx(sklearn_kappa(["1"] * 5, ["4"] * 5, ORDINAL)) == 0.0


def test_abstentions_are_left_out_like_cannot_assess():
    a = ["1", "N/A", Verdict.CANNOT_ASSESS, "cannot assess", "4", None, "5"]
    b = ["1", "2", "3", "4", "N/A", "5", "4"]
    result = compare_options(a, b, ORDINAL)
    assert (result.pairs_used, result.excluded_cannot_assess, result.only_in_b) == (2, 4, 1)
    alpha = options_alpha([a, b], ORDINAL)
    assert alpha.excluded_cannot_assess == 4 and alpha.pairable_units == 2


def test_missing_values_and_no_pairs_give_none_not_nan():
    result = compare_options({1: "1", 2: None}, {3: "2"}, ORDINAL)
    assert result.pairs_used == 0 and result.kappa is None and result.macro_f1 is None
    assert result.note == "no pairs to compare: no key has a verdict from both sources"
    only_na = compare_options(["N/A", "3"], ["2", "CANNOT_ASSESS"], ORDINAL)
    assert "all 2 shared keys have NA or CANNOT_ASSESS" in only_na.note
    single_unit = options_alpha([["1", None], ["2", "3"]], ORDINAL)
    assert single_unit.alpha is None and "found 1" in single_unit.note
    assert options_alpha([["1", "2"]], ORDINAL).note == "alpha needs at least 2 sources, got 1"


def test_labels_match_as_the_graders_read_them_and_unknown_ones_are_refused():
    result = compare_options(["Formal ", "CASUAL"], ["formal", "casual"], NOMINAL)
    assert result.kappa == 1.0
    with pytest.raises(ValueError, match=r"criterion 'tone' has no option 'polite'; its "
                                         r"options are 'formal', 'n/a', 'casual', 'rude'"):
        compare_options(["formal"], ["polite"], NOMINAL)
    with pytest.raises(ValueError, match="a verdict must be an option label, got 3"):
        compare_options(["formal"], [3], NOMINAL)


def test_binary_criteria_have_no_option_scale():
    assert OptionScale.of(Criterion(requirement="Cites a source")) is None
    stored = OptionScale.of(type("Row", (), {"options": [{"label": "low", "value": 0},
                                                         {"label": "high", "value": 1}],
                                             "scale_type": "nominal", "name": "x"})())
    assert stored.labels == ("low", "high") and stored.scale_type == "nominal"


@pytest.mark.parametrize("scale", [ORDINAL, NOMINAL], ids=["ordinal", "nominal"])
def test_kappa_interval_is_the_percentile_of_scikit_learn_on_each_resample(scale):
    a, b = random_sources(3, scale, size=40)
    ya, yb = scored_pairs(a, b, scale)
    interval = kappa_interval(a, b, scale, resamples=200, seed=7)
    rng = random.Random(7)  # grading.bootstrap.bootstrap_interval's draws
    expected = []
    for _ in range(200):
        picks = [rng.randrange(len(ya)) for _ in range(len(ya))]
        expected.append(sklearn_kappa([ya[i] for i in picks], [yb[i] for i in picks], scale))
    assert interval == percentile_interval(expected, resamples=200)
    point = compare_options(a, b, scale).kappa
    assert interval.low <= point <= interval.high
    assert kappa_interval(a, b, scale, resamples=200, seed=7) == interval


@pytest.mark.parametrize("scale", [ORDINAL, NOMINAL], ids=["ordinal", "nominal"])
def test_alpha_interval_is_the_percentile_of_the_krippendorff_package(scale):
    sources = random_sources(5, scale, sources=3, size=30)
    interval = alpha_interval(sources, scale, resamples=100, seed=3)
    index = {label: i for i, label in enumerate(scale.labels)}
    # units in order of their first scored value, source by source, as alpha_interval keeps them
    order = dict.fromkeys(u for s in sources for u, v in enumerate(s) if v in index)
    units = [[index[s[u]] for s in sources if s[u] in index] for u in order]
    pairable = [u for u in units if len(u) >= 2]
    rng = random.Random(3)
    expected = []
    for _ in range(100):
        picks = [pairable[rng.randrange(len(pairable))] for _ in range(len(pairable))]
        counts = np.array([[u.count(i) for i in range(len(scale.labels))] for u in picks])
        value = krippendorff.alpha(value_counts=counts, level_of_measurement=scale.scale_type)
        expected.append(None if math.isnan(value) else value)
    found = percentile_interval(expected, resamples=100)
    assert (interval.low, interval.high) == pytest.approx((found.low, found.high), abs=1e-12)
    assert alpha_interval(sources[:1], scale) is None
