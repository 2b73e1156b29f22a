"""Agreement on preferences: the judge's kappa against people over A / TIE / B checked against
scikit-learn's cohen_kappa_score, CANNOT_ASSESS and missing answers left out and counted, a
seeded bootstrap interval; people's own agreement checked against the krippendorff package."""

from __future__ import annotations

import math
import random

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from grading.pairwise.agreement import judge_vs_people, people_agreement

SIDES = ("A", "TIE", "B")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_judge_vs_people_kappa_is_scikit_learns_cohen_kappa(seed):
    rng = random.Random(seed)
    judge = {n: rng.choice(SIDES) for n in range(60)}
    people = {n: side if rng.random() < 0.6 else rng.choice(SIDES) for n, side in judge.items()}

    found = judge_vs_people(judge, people, criterion="complete", resamples=200, seed=seed)

    keys = sorted(judge)
    expected = cohen_kappa_score([judge[k] for k in keys], [people[k] for k in keys])
    assert found.kappa == pytest.approx(expected)
    assert found.n == 60
    assert found.percent_agreement == pytest.approx(
        100 * sum(judge[k] == people[k] for k in keys) / 60)
    assert found.kappa_interval.low <= found.kappa <= found.kappa_interval.high
    assert found.kappa_interval.level == 0.95
    again = judge_vs_people(judge, people, resamples=200, seed=seed)
    assert again.kappa_interval == found.kappa_interval  # seeded: the same interval


def test_cannot_assess_and_missing_preferences_are_left_out_and_counted():
    judge = {1: "A", 2: "B", 3: "TIE", 4: "CANNOT_ASSESS", 5: "A", 6: None, 7: "B"}
    people = {1: "A", 2: "A", 3: "TIE", 4: "A", 5: "CANNOT_ASSESS", 6: "B", 8: "B"}

    found = judge_vs_people(judge, people, resamples=100)

    assert (found.n, found.excluded_cannot_assess, found.only_judge, found.only_people) == (
        3, 2, 1, 2)
    assert found.kappa == pytest.approx(cohen_kappa_score(["A", "B", "TIE"],
                                                          ["A", "A", "TIE"]))
    assert found.confusion.labels == SIDES
    assert found.confusion.rows == ((1, 0, 0), (0, 1, 0), (1, 0, 0))


def test_kappa_is_none_with_a_reason_when_everyone_always_says_the_same():
    found = judge_vs_people({1: "B", 2: "B"}, {1: "B", 2: "B"})
    assert (found.kappa, found.kappa_interval, found.percent_agreement) == (None, None, 100.0)
    assert "undefined" in found.note
    empty = judge_vs_people({1: "A"}, {2: "A"})
    assert (empty.n, empty.kappa) == (0, None) and "no pairs" in empty.note


def test_people_agreement_counts_pairs_with_two_or_more_reviewers_and_matches_krippendorff():
    rng = random.Random(7)
    reviewers = ["ann", "bob", "cat"]
    answers = {}
    for pair in range(40):
        truth = rng.choice(SIDES)
        answers[pair] = {who: truth if rng.random() < 0.7 else rng.choice(SIDES)
                         for who in reviewers if rng.random() < 0.8}
    answers[99] = {"ann": "A"}  # one reviewer: not counted
    answers[98] = {"ann": "B", "bob": "CANNOT_ASSESS"}  # one preference: not counted

    found = people_agreement(answers, resamples=200)

    counted = {k: v for k, v in answers.items() if len(v) >= 2 and k not in (98, 99)}
    assert found.pairs == len(counted)
    couples = [(x, y) for v in counted.values() for i, x in enumerate(v.values())
               for y in list(v.values())[i + 1:]]
    assert found.reviewer_pairs == len(couples)
    assert found.percent_agreement == pytest.approx(
        100 * sum(x == y for x, y in couples) / len(couples))
    data = np.array([[SIDES.index(counted[k][who]) if who in counted[k] else np.nan
                      for k in sorted(counted)] for who in reviewers])
    assert found.alpha == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    assert found.alpha_interval.low <= found.alpha <= found.alpha_interval.high


def test_people_agreement_without_a_shared_pair_says_so():
    found = people_agreement({1: {"ann": "A"}, 2: {"bob": "B", "cat": None}})
    assert (found.pairs, found.alpha, found.percent_agreement) == (0, None, None)
    assert "two or more people" in found.note
    assert not math.isnan(judge_vs_people({1: "A", 2: "B"}, {1: "B", 2: "A"}).kappa)


def test_a_side_that_is_no_preference_is_named():
    with pytest.raises(ValueError, match="no option 'LEFT'"):
        people_agreement({1: {"ann": "LEFT", "bob": "A"}})
