"""Leave one reviewer out on a multi-choice criterion (storage/services/option_loo.py): the
figures are scikit-learn's kappas on the same pairs, and the judge is scored against each
reviewer's reference, never against the human verdict in force."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sklearn.metrics import cohen_kappa_score

from storage.services import agreement
from storage.services.option_loo import leave_one_out
from tests.storage.test_agreement_options import HUMAN, JUDGE, OTHER, _data

LIKERT = ["1", "2", "3", "4", "5"]


def _clarity(source: dict) -> dict[int, str]:
    return {rid: v for (rid, cid), v in source.items() if cid == 2 and v != "N/A"}


def test_two_reviewers_are_each_others_reference_and_the_judge_is_averaged_over_both():
    data = replace(_data(), reviewer_verdicts={"ana": HUMAN, "bo": OTHER})
    scale = agreement.criterion_kinds(data.criteria)[2]
    people, judges = leave_one_out(data, 2, scale, ["run:1"])
    ana, bo, judge = _clarity(HUMAN), _clarity(OTHER), _clarity(JUDGE)

    def kappa(ref, other):
        keys = [k for k in ref if k in other]
        return cohen_kappa_score([ref[k] for k in keys], [other[k] for k in keys],
                                 labels=LIKERT, weights="quadratic")

    # the people's figure: ana against bo on the three responses both rated (N/A left out)
    assert people["ana"].value == pytest.approx(kappa(bo, ana)) and people["ana"].n == 3
    assert people["bo"].value == pytest.approx(people["ana"].value)  # symmetric
    # the judge: against bo where ana rated, and against ana where bo rated, averaged
    expected = (kappa({k: bo[k] for k in ana if k in bo}, judge)
                + kappa({k: ana[k] for k in bo if k in ana}, judge)) / 2
    assert judges["run:1"].value == pytest.approx(expected)
    assert judges["run:1"].interval is not None and people["ana"].interval is not None


def test_fewer_than_two_reviewers_give_no_leave_one_out_figures():
    data = replace(_data(), reviewer_verdicts={"ana": HUMAN})
    scale = agreement.criterion_kinds(data.criteria)[2]
    assert leave_one_out(data, 2, scale, ["run:1"]) == ({}, {})
