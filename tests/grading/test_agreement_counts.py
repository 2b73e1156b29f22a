"""The counts entry point of grading.agreement: what a database's GROUP BY gives.

Same generated data as tests/grading/test_agreement.py; checked against scikit-learn and
against compare_verdicts on the verdicts behind the counts (every field identical).
"""

from __future__ import annotations

import random
import warnings
from collections import Counter

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from grading import Verdict
from grading.agreement import (
    compare_counts,
    compare_counts_by_criterion,
    compare_verdicts,
    compare_verdicts_by_criterion,
    pair_scores,
)
from grading.agreement_arrays import pair_scores_array
from tests.grading.test_agreement import GENERATED, LABELS, generate_pair, same

MET, UNMET, CA = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS


def counts_of(a, b) -> Counter:
    return Counter((x, y) for x, y in zip(a, b, strict=True) if (x, y) != (None, None))


@pytest.mark.parametrize(
    ("seed", "size", "agreement", "met_rate", "ca_rate", "missing_rate"), GENERATED
)
def test_counts_give_the_same_figures_as_the_verdicts_and_as_scikit_learn(
    seed, size, agreement, met_rate, ca_rate, missing_rate
):
    a, b = generate_pair(seed, size, agreement=agreement, met_rate=met_rate, ca_rate=ca_rate,
                         missing_rate=missing_rate)

    from_counts = compare_counts(counts_of(a, b))

    assert from_counts == compare_verdicts(a, b)
    kept = [(x.value, y.value) for x, y in zip(a, b, strict=True)
            if x is not None and y is not None and CA not in (x, y)]
    if not kept:
        assert from_counts.pairs_used == 0
        return
    y_a, y_b = [x for x, _ in kept], [y for _, y in kept]
    with warnings.catch_warnings(action="ignore"):
        kappa = cohen_kappa_score(y_a, y_b, labels=LABELS)
        macro = f1_score(y_a, y_b, labels=LABELS, average="macro", zero_division=np.nan)
    assert same(from_counts.cohens_kappa, kappa)
    assert same(from_counts.balanced_f1, macro)


def test_counts_written_as_strings_and_one_sided_keys_are_read_like_verdicts():
    result = compare_counts({("MET", "MET"): 3, ("UNMET", "MET"): 1, ("MET", None): 2,
                             (None, "UNMET"): 4, ("CANNOT_ASSESS", "MET"): 5, (None, None): 9})

    assert (result.pairs_used, result.only_in_a, result.only_in_b,
            result.excluded_cannot_assess) == (4, 2, 4, 5)
    assert result.confusion.rows == ((3, 0), (1, 0))
    assert result.percent_agreement == 75.0


def test_no_counts_give_no_pairs_with_a_note():
    result = compare_counts({})

    assert result.pairs_used == 0 and result.cohens_kappa is None
    assert "no key has a verdict from both sources" in result.note


def test_a_negative_count_is_refused():
    with pytest.raises(ValueError, match="negative"):
        compare_counts({(MET, MET): -1})


def test_counts_by_criterion_equal_the_verdicts_by_criterion():
    a, b = {}, {}
    for criterion in ("c1", "c2", "c3"):
        xs, ys = generate_pair(len(criterion) + ord(criterion[-1]), 60, agreement=0.7,
                               met_rate=0.4, ca_rate=0.1, missing_rate=0.1)
        for item, (x, y) in enumerate(zip(xs, ys, strict=True)):
            a[item, criterion], b[item, criterion] = x, y
    per: dict[str, Counter] = {}
    for (item, criterion), x in a.items():
        if (x, b[item, criterion]) != (None, None):
            per.setdefault(criterion, Counter())[x, b[item, criterion]] += 1

    assert compare_counts_by_criterion(per) == compare_verdicts_by_criterion(a, b)


def test_pair_scores_of_many_matrices_are_the_same_floats_as_one_at_a_time():
    rng = random.Random(7)
    cells = [[0, 0, 0, 0], [5, 0, 0, 0], [0, 0, 0, 7], [0, 3, 0, 0], [0, 0, 2, 0],
             [1, 1, 1, 1]]
    cells += [[rng.randrange(0, high) for _ in range(4)]
              for high in (3, 10, 400, 5000) for _ in range(500)]

    arrays = pair_scores_array(np.array(cells))

    for i, row in enumerate(cells):
        expected = pair_scores(*row)
        got = tuple(None if np.isnan(a[i]) else float(a[i]) for a in arrays)
        assert got == expected, (row, got, expected)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_alpha_sums_the_units_disagreement_left_to_right_from_pairs_and_from_an_array(seed):
    """The observed disagreement is added unit after unit, as Python adds floats, whether
    the (MET, UNMET) pairs come as tuples or as the kept report's array: the report's
    alpha is the same float either way (numpy's pairwise sum gives other last bits)."""
    from grading.agreement import alpha_from_counts, observed_disagreement

    rng = random.Random(seed)
    pairs = [(rng.randint(1, 5), rng.randint(1, 5)) for _ in range(1000)]
    in_order = 0
    for met, unmet in pairs:
        in_order += met * unmet / (met + unmet - 1)
    array = np.array(pairs, dtype=np.int64)
    terms = array[:, 0] * array[:, 1] / (array[:, 0] + array[:, 1] - 1)
    assert float(np.sum(terms)) != in_order  # the data tells the two orders apart
    assert observed_disagreement(pairs) == in_order == observed_disagreement(array)
    assert observed_disagreement([]) == 0 == observed_disagreement(array[:0])

    n, met = sum(m + u for m, u in pairs), sum(m for m, _u in pairs)
    counts = dict(sources=5, units=1000, pairable_units=1000, values_used=n, met=met,
                  excluded_cannot_assess=0)
    alpha = alpha_from_counts(**counts, disagreeing=iter(pairs)).alpha
    assert alpha == 1 - (n - 1) * in_order / (met * (n - met))
    assert alpha_from_counts(**counts, disagreeing=array).alpha == alpha
