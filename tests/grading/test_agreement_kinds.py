"""Agreement over a rubric mixing binary and multi-choice criteria: each row on its own scale."""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score

from grading import CriterionOption, Verdict
from grading.agreement import compare_verdicts, compare_verdicts_by_criterion, krippendorff_alpha
from grading.agreement_kinds import alpha_by_criterion, compare_by_criterion, verdicts_differ
from grading.option_agreement import (
    OptionMultiSourceAgreement,
    OptionPairwiseAgreement,
    OptionScale,
    compare_options,
    options_alpha,
)

M, U, CA = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS
LIKERT = OptionScale((*(CriterionOption(label=str(i), value=(i - 1) / 4) for i in range(1, 6)),
                      CriterionOption(label="N/A", value=0, na=True)), "ordinal")
KINDS = {"clarity": LIKERT, "cites": None}
HUMAN = {(1, "cites"): M, (2, "cites"): U, (3, "cites"): M, (4, "cites"): U,
         (1, "clarity"): "1", (2, "clarity"): "3", (3, "clarity"): "5", (4, "clarity"): "N/A"}
JUDGE = {(1, "cites"): M, (2, "cites"): M, (3, "cites"): M, (4, "cites"): U,
         (1, "clarity"): "2", (2, "clarity"): "3", (3, "clarity"): "4", (4, "clarity"): "2"}
OTHER = {(1, "cites"): U, (2, "cites"): U, (3, "cites"): M, (4, "cites"): CA,
         (1, "clarity"): "1", (2, "clarity"): "4", (3, "clarity"): "5", (4, "clarity"): "1"}


def only(source, criterion):
    return {k: v for k, v in source.items() if k[1] == criterion}


def test_each_criterion_gets_the_figures_of_its_kind():
    result = compare_by_criterion(HUMAN, JUDGE, KINDS)
    assert list(result.per_criterion) == ["cites", "clarity"]
    clarity = result.per_criterion["clarity"]
    assert isinstance(clarity, OptionPairwiseAgreement)
    assert clarity.metric == "quadratic-weighted kappa"
    assert clarity.kappa == pytest.approx(cohen_kappa_score(
        ["1", "3", "5"], ["2", "3", "4"], labels=list(LIKERT.labels), weights="quadratic"))
    assert clarity.excluded_cannot_assess == 1  # the N/A option, as CANNOT_ASSESS is
    assert clarity.confusion.labels == ("1", "2", "3", "4", "5")
    assert result.per_criterion["cites"] == compare_verdicts(only(HUMAN, "cites"),
                                                             only(JUDGE, "cites"))


def test_the_overall_figures_pool_the_binary_criteria_and_say_what_is_left_out():
    result = compare_by_criterion(HUMAN, JUDGE, KINDS)
    binary = compare_verdicts(only(HUMAN, "cites"), only(JUDGE, "cites"))
    assert result.overall.cohens_kappa == binary.cohens_kappa
    assert result.overall.pairs_used == 4
    assert result.overall.note.endswith("1 multi-choice criterion is not pooled here (each "
                                        "has its own figures on its own scale)")


def test_a_binary_rubric_is_compared_exactly_as_before():
    binary = {k: v for k, v in HUMAN.items() if k[1] == "cites"}
    judge = {k: v for k, v in JUDGE.items() if k[1] == "cites"}
    assert compare_by_criterion(binary, judge, {}) == compare_verdicts_by_criterion(binary, judge)


def test_alpha_per_criterion_uses_the_scale_and_pools_only_binary_overall():
    result = alpha_by_criterion([HUMAN, JUDGE, OTHER], KINDS)
    clarity = result.per_criterion["clarity"]
    assert isinstance(clarity, OptionMultiSourceAgreement)
    assert clarity.metric == "Krippendorff's alpha (ordinal)"
    assert clarity == options_alpha([only(s, "clarity") for s in (HUMAN, JUDGE, OTHER)], LIKERT)
    binary = krippendorff_alpha([only(s, "cites") for s in (HUMAN, JUDGE, OTHER)])
    assert result.overall.alpha == binary.alpha
    assert "1 multi-choice criterion is not pooled" in result.overall.note


def test_a_nominal_criterion_gets_cohens_kappa_and_nominal_alpha():
    nominal = OptionScale(LIKERT.options, "nominal")
    result = compare_by_criterion(HUMAN, JUDGE, {"clarity": nominal})
    clarity = result.per_criterion["clarity"]
    assert clarity.metric == "Cohen's kappa"
    assert clarity == compare_options(only(HUMAN, "clarity"), only(JUDGE, "clarity"), nominal)
    alpha = alpha_by_criterion([HUMAN, OTHER], {"clarity": nominal}).per_criterion["clarity"]
    assert alpha.metric == "Krippendorff's alpha (nominal)"


@pytest.mark.parametrize(("verdicts", "scale", "differ"), [
    pytest.param([M, U], None, True, id="met-unmet"),
    pytest.param([M, CA, None], None, False, id="cannot-assess-is-no-disagreement"),
    pytest.param(["2", "3"], LIKERT, True, id="two-options"),
    pytest.param(["3", " 3 ", None], LIKERT, False, id="same-option"),
    pytest.param(["3", "N/A", "CANNOT_ASSESS"], LIKERT, False, id="na-is-no-disagreement"),
])
def test_verdicts_differ_on_two_different_decided_answers(verdicts, scale, differ):
    assert verdicts_differ(verdicts, scale) is differ


def test_an_unknown_label_names_the_criterion():
    named = OptionScale(LIKERT.options, "ordinal", "clarity")
    with pytest.raises(ValueError, match="criterion 'clarity' has no option 'great'"):
        compare_by_criterion({(1, "clarity"): "great"}, {(1, "clarity"): "3"},
                             {"clarity": named})
