"""Prediction-powered estimates: a hand-computed case and a simulation with known truth."""

import math
import random

import pytest

from grading.trust.figures import var
from grading.trust.ppi import ppi_mean


def test_ppi_hand_computed_small_case():
    # judge on all 6: mean 4/6; sample of 3: errors y - f = (0, -1, +1... ) see below
    judge_all = [1, 1, 1, 1, 0, 0]
    judge_sample = [1, 1, 0]
    people_sample = [1, 0, 0]
    result = ppi_mean(judge_all, judge_sample, people_sample)
    errors = [0, -1, 0]
    theta = 4 / 6 + sum(errors) / 3
    var_f = sum((v - 4 / 6) ** 2 for v in judge_all) / 5  # 4/15
    var_e = sum((e + 1 / 3) ** 2 for e in errors) / 2  # 1/3
    half = 1.959963984540054 * math.sqrt(var_f / 6 + var_e / 3)
    assert result.classical.value == pytest.approx(1 / 3)
    assert result.classical.value == pytest.approx(theta)
    assert result.classical.low == pytest.approx(theta - half)
    assert result.classical.high == pytest.approx(theta + half)
    # PPI++: lambda = cov(y, f) / ((1 + n/N) var(f)) = (1/6) / (1.5 x 4/15) = 5/12
    lam = (1 / 6) / (1.5 * 4 / 15)
    assert result.power == pytest.approx(5 / 12) == pytest.approx(lam)
    rect = [y - lam * f for y, f in zip(people_sample, judge_sample, strict=True)]
    mean_r = sum(rect) / 3
    tuned = lam * 4 / 6 + mean_r
    half = 1.959963984540054 * math.sqrt(
        lam ** 2 * var_f / 6 + sum((r - mean_r) ** 2 for r in rect) / 2 / 3)
    assert result.corrected.value == pytest.approx(tuned)
    assert result.corrected.low == pytest.approx(tuned - half)
    assert result.corrected.high == pytest.approx(tuned + half)
    assert result.judge.value == pytest.approx(4 / 6) and result.judge.n == 6
    assert result.people.value == pytest.approx(1 / 3) and result.people.n == 3
    assert result.judge_on_sample == pytest.approx(2 / 3)


def test_ppi_without_a_sample_gives_no_estimate():
    result = ppi_mean([1, 0, 1], [], [])
    assert result.corrected.value is None and result.corrected.n == 0
    assert result.judge.value == pytest.approx(2 / 3)
    one = ppi_mean([1, 0, 1], [1], [0])
    assert one.corrected.value == pytest.approx(2 / 3 - 1) and one.corrected.low is None


def test_ppi_rejects_unaligned_sample():
    with pytest.raises(ValueError, match="aligned"):
        ppi_mean([1, 0], [1], [1, 0])


def _simulate(seed: int, *, big_n: int = 2000, n: int = 100, flip: float = 0.1,
              bias: float = 0.15):
    """Truth: pass rate 0.6. The judge is biased: it says MET on a bias share of the UNMET
    responses, and errs at random on ``flip`` of the rest."""
    rng = random.Random(seed)
    truth = [1 if rng.random() < 0.6 else 0 for _ in range(big_n)]
    judge = []
    for y in truth:
        f = y
        if y == 0 and rng.random() < bias / 0.4:
            f = 1
        elif rng.random() < flip:
            f = 1 - f
        judge.append(f)
    sample = rng.sample(range(big_n), n)
    return truth, judge, sample


def test_ppi_interval_covers_the_truth_about_95_percent_of_the_time():
    covered = 0
    people_wider = 0
    judge_covered = 0
    reps = 400
    for seed in range(reps):
        truth, judge, sample = _simulate(seed)
        true_mean = sum(truth) / len(truth)  # the estimand: the pass rate of these responses
        result = ppi_mean(judge, [judge[i] for i in sample], [truth[i] for i in sample])
        covered += result.corrected.low <= true_mean <= result.corrected.high
        judge_covered += result.judge.low <= true_mean <= result.judge.high
        people_wider += ((result.people.high - result.people.low)
                         > (result.corrected.high - result.corrected.low))
    assert 0.92 <= covered / reps <= 0.98
    # the judge's own interval is centred on its bias: it almost never covers the truth
    assert judge_covered / reps < 0.05
    # about 75% right and biased: PPI is not wider than people's 100 alone
    assert people_wider / reps > 0.5


def test_a_judge_that_knows_nothing_widens_classical_ppi_but_not_the_tuned_estimate():
    truth, judge, sample = _simulate(1, flip=0.02, bias=0.05)
    good = ppi_mean(judge, [judge[i] for i in sample], [truth[i] for i in sample])
    rng = random.Random(2)
    noise = [rng.randint(0, 1) for _ in truth]  # a judge that knows nothing
    bad = ppi_mean(noise, [noise[i] for i in sample], [truth[i] for i in sample])
    width = lambda f: f.high - f.low  # noqa: E731
    assert width(good.corrected) < 0.8 * width(good.people)
    assert good.power > 0.8  # a good judge is trusted nearly fully
    # Classical PPI pays for a useless judge: wider than people's own interval.
    assert width(bad.classical) > 1.2 * width(bad.people)
    # PPI++ gives it (almost) no weight: people's own interval, not wider.
    assert bad.power < 0.15
    assert width(bad.corrected) <= width(bad.people) * 1.01


def test_the_tuned_interval_covers_the_truth_and_is_never_wider_than_the_classical_one():
    covered = 0
    reps = 400
    for seed in range(reps):
        truth, judge, sample = _simulate(seed, flip=0.3, bias=0.1)  # a mediocre judge
        true_mean = sum(truth) / len(truth)
        result = ppi_mean(judge, [judge[i] for i in sample], [truth[i] for i in sample])
        covered += result.corrected.low <= true_mean <= result.corrected.high
        tuned = result.corrected.high - result.corrected.low
        assert tuned <= (result.classical.high - result.classical.low) * 1.02
        assert 0 <= result.power <= 1
    assert 0.92 <= covered / reps <= 0.98


def _var_term_by_term(values) -> float:
    """The sample variance as ``var`` worked it out before it squared each distinct value
    once: every squared deviation on its own, added exactly."""
    centre = math.fsum(values) / len(values)
    return math.fsum((v - centre) ** 2 for v in values) / (len(values) - 1)


@pytest.mark.parametrize("values", [
    pytest.param([float(i % 2) for i in range(10_001)], id="MET-UNMET"),
    pytest.param([[0.0, 0.25, 0.5, 0.75, 1.0][i % 5] for i in range(999)], id="options"),
    pytest.param(random.Random(4).choices([0, 1, 2], k=300), id="integers"),
    pytest.param([random.Random(5).gauss(0.3, 2.0) for _ in range(5_000)], id="continuous"),
    pytest.param([1e16, 1.0, -1e16, 3.0] * 40, id="cancelling"),
    pytest.param([0.5, float("nan")] * 50, id="nan"),
    pytest.param([0.1, 0.7, 0.3], id="few"),
])
def test_variance_is_the_same_float_as_term_by_term(values):
    found, expected = var(values), _var_term_by_term(values)
    assert found == expected or (math.isnan(found) and math.isnan(expected))


@pytest.mark.parametrize("values", [
    pytest.param([float(i % 2) for i in range(10_001)], id="MET-UNMET"),
    pytest.param([[0.0, 0.25, 0.5, 0.75, 1.0][i % 5] for i in range(999)], id="options"),
    pytest.param([0.1] * 7 + [0.7] * 90 + [1e-9] * 3, id="inexact"),
    pytest.param([1e16, 1.0, -1e16, 3.0] * 40, id="cancelling"),
    pytest.param([random.Random(5).gauss(0.3, 2.0) for _ in range(5_000)], id="continuous"),
    pytest.param([-0.0] * 100, id="negative zero"),
])
def test_mean_and_variance_of_an_array_are_the_floats_of_its_list(values):
    """The trust report passes a judge's values as numpy arrays (counted by distinct value):
    the same floats as the list's (fsum, term by term), sign of zero included."""
    import numpy as np

    from grading.trust.figures import mean

    array = np.asarray(values, dtype=float)
    assert repr(mean(array)) == repr(math.fsum(values) / len(values))
    assert repr(var(array)) == repr(_var_term_by_term(values))
