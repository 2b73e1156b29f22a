"""Table tests for judge-panel voting rules; panel scores go through the one aggregation."""

from __future__ import annotations

import pytest

from grading import Criterion, CriterionOption, ScoringSettings, Verdict
from grading.aggregation import score_verdicts
from grading.panels import combine_members, combine_options, combine_verdicts, lower_score_verdict
from grading.ties import LOWER_SCORE, binary_tie

MET, UNMET, CA = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS
FAILED = None


@pytest.mark.parametrize(
    ("votes", "rule", "weight", "weights", "expected", "tie"),
    [
        pytest.param([MET, MET, UNMET], "majority", 10, None, MET, False, id="majority-met"),
        pytest.param([UNMET, MET, UNMET], "majority", 10, None, UNMET, False,
                     id="majority-unmet"),
        # A parse failure stays in the denominator: 1 of 3 is no majority, and the MET/UNMET
        # tie is undecided (grading.ties: the one tie rule, as for samples), never settled by
        # which member came first. (Changed deliberately: ties went to the lower score.)
        pytest.param([MET, UNMET, FAILED], "majority", 10, None, CA, True,
                     id="failed-member-tie-positive-undecided"),
        pytest.param([UNMET, MET, FAILED], "majority", 10, None, CA, True,
                     id="failed-member-tie-order-independent"),
        pytest.param([MET, UNMET, FAILED], "majority", -5, None, CA, True,
                     id="failed-member-tie-negative-undecided"),
        pytest.param([MET, UNMET, CA], "majority", 10, None, CA, True,
                     id="cannot-assess-is-an-abstention"),
        pytest.param([MET, FAILED, CA], "majority", 10, None, CA, False,
                     id="abstentions-leave-no-majority"),
        pytest.param([MET, MET, FAILED], "majority", 10, None, MET, False,
                     id="two-of-three-despite-failure"),
        pytest.param([MET, UNMET], "majority", 10, None, CA, True, id="even-panel-tie"),
        pytest.param([MET, UNMET, MET, UNMET], "majority", 0, None, CA, True,
                     id="zero-weight-tie"),
        pytest.param([FAILED, FAILED, FAILED], "majority", 10, None, None, False,
                     id="all-failed-no-verdict"),
        pytest.param([CA, CA], "majority", 10, None, CA, False, id="all-cannot-assess"),
        pytest.param([MET, MET, MET], "unanimous", 10, None, MET, False, id="unanimous-met"),
        pytest.param([MET, UNMET, MET], "unanimous", 10, None, UNMET, False,
                     id="unanimous-one-dissent"),
        pytest.param([MET, FAILED, MET], "unanimous", 10, None, CA, False,
                     id="unanimous-with-failure-abstains"),
        pytest.param([UNMET, MET, UNMET], "any", 10, None, MET, False, id="any-one-met"),
        pytest.param([UNMET, CA, FAILED], "any", -3, None, UNMET, False, id="any-none-met"),
        pytest.param([CA, FAILED], "any", 10, None, CA, False, id="any-all-abstain"),
        pytest.param([MET, UNMET, UNMET], "weighted", 10, [3, 1, 1], MET, False,
                     id="weighted-heavy-member-wins"),
        pytest.param([MET, UNMET, FAILED], "weighted", 10, [2, 1, 2], CA, False,
                     id="weighted-failed-weight-in-denominator"),
        pytest.param([MET, UNMET, UNMET], "weighted", -8, [2, 1, 1], CA, True,
                     id="weighted-tie-negative-undecided"),
    ],
)
def test_panel_rule_table(votes, rule, weight, weights, expected, tie):
    decision = combine_verdicts(votes, rule, criterion_weight=weight, weights=weights)
    assert decision.verdict == expected
    assert decision.tie is tie
    if tie:
        assert "undecided" in decision.note


@pytest.mark.parametrize(("votes", "rule", "weight", "weights", "expected"), [
    pytest.param([MET, UNMET, FAILED], "majority", 10, None, UNMET, id="positive-unmet"),
    pytest.param([UNMET, MET, FAILED], "majority", 10, None, UNMET, id="order-independent"),
    pytest.param([MET, UNMET, FAILED], "majority", -5, None, MET, id="negative-met"),
    pytest.param([MET, UNMET, MET, UNMET], "majority", 0, None, UNMET, id="zero-weight"),
    pytest.param([MET, UNMET, UNMET], "weighted", -8, [2, 1, 1], MET, id="weighted-negative"),
])
def test_panels_stored_before_the_one_rule_keep_the_lower_score(votes, rule, weight, weights,
                                                                 expected):
    decision = combine_verdicts(votes, rule, criterion_weight=weight, weights=weights,
                                tie_rule=LOWER_SCORE)
    assert (decision.verdict, decision.tie) == (expected, True)
    assert "lower score" in decision.note


def test_tie_note_names_the_counts():
    decision = combine_verdicts([MET, UNMET, FAILED], "majority", criterion_weight=10)
    assert decision.note == "tie (MET 1, UNMET 1, abstained 1): undecided, CANNOT_ASSESS"
    assert (decision.met, decision.unmet, decision.abstained, decision.failed) == (1, 1, 1, 1)


def test_samples_and_panels_share_the_one_tie_rule():
    """A 2-2 split is undecided whether it is four samples of one judge or four members."""
    from grading.samples import TIE, majority

    assert majority(["MET", "UNMET", "UNMET", "MET"]) == TIE
    assert binary_tie("MET 2, UNMET 2", criterion_weight=-4) == (
        CA, "tie (MET 2, UNMET 2): undecided, CANNOT_ASSESS")
    panel = combine_verdicts([MET, UNMET, UNMET, MET], "majority", criterion_weight=-4)
    assert (panel.verdict, panel.tie) == (CA, True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"rule": "vote"}, "unknown panel rule 'vote'", id="unknown-rule"),
        pytest.param({"rule": "weighted"}, "needs a weight per member", id="weights-missing"),
        pytest.param({"rule": "weighted", "weights": [1, 0]}, "member 2: weight must be a "
                     "positive number", id="zero-weight-member"),
        pytest.param({"rule": "weighted", "weights": [1]}, "2 panel members but 1 weights",
                     id="weights-count"),
        pytest.param({"rule": "majority", "weights": [2, 1]}, "only for the weighted rule",
                     id="weights-on-majority"),
    ],
)
def test_bad_panel_settings_are_refused_with_a_reason(kwargs, message):
    with pytest.raises(ValueError, match=message):
        combine_verdicts([MET, UNMET], criterion_weight=10, **kwargs)


def test_a_panel_needs_two_members():
    with pytest.raises(ValueError, match="at least two members"):
        combine_verdicts([MET], "majority", criterion_weight=10)


def test_lower_score_verdict_follows_the_weight_sign():
    assert lower_score_verdict(4) is UNMET
    assert lower_score_verdict(-4) is MET
    assert lower_score_verdict(0) is UNMET


def test_panel_score_comes_from_the_one_aggregation_function():
    criteria = [Criterion(weight=10, requirement="cites the source"),
                Criterion(weight=5, requirement="answers in French"),
                Criterion(weight=-6, requirement="invents a number")]
    members = [
        [MET, UNMET, MET],
        [MET, MET, UNMET],
        [FAILED, UNMET, FAILED],
    ]
    decisions = combine_members(members, "majority",
                                criterion_weights=[c.weight for c in criteria])
    verdicts = [d.verdict for d in decisions]
    assert verdicts == [MET, UNMET, CA]  # the last is a tie: undecided
    aggregate, _, final = score_verdicts(criteria, verdicts, ScoringSettings())
    assert aggregate.raw_score == pytest.approx(10)  # CANNOT_ASSESS skipped (the default)
    assert final == pytest.approx(10 / 15)


def test_all_negative_rubric_panel_score():
    criteria = [Criterion(weight=-4, requirement="rude"), Criterion(weight=-6, requirement="wrong")]
    decisions = combine_members([[UNMET, MET], [UNMET, UNMET], [UNMET, MET]], "unanimous",
                                criterion_weights=[-4, -6])
    verdicts = [d.verdict for d in decisions]
    assert verdicts == [UNMET, UNMET]
    _, _, final = score_verdicts(criteria, verdicts, ScoringSettings())
    assert final == pytest.approx(1.0)


def test_members_with_a_different_criterion_count_are_refused():
    with pytest.raises(ValueError, match="member 2 has 1 verdicts for 2 criteria"):
        combine_members([[MET, MET], [MET]], "any", criterion_weights=[1, 2])


# -- multi-choice criteria -----------------------------------------------------------------

LIKERT5 = Criterion(requirement="How clear?", options=[
    CriterionOption(label=str(i), value=(i - 1) / 4) for i in range(1, 6)]
    + [CriterionOption(label="N/A", value=0, na=True)])
TONE3 = Criterion(requirement="Tone?", scale_type="nominal", options=[
    CriterionOption(label="formal", value=1.0), CriterionOption(label="casual", value=0.5),
    CriterionOption(label="rude", value=0.0)])


@pytest.mark.parametrize(
    ("votes", "choice", "tie"),
    [
        pytest.param(["1", "5", "4"], "4", False, id="odd-median"),
        pytest.param(["2", "5", "4", "1"], "2", True, id="even-split-goes-to-the-worse"),
        pytest.param(["3", "3", "5", "1"], "3", False, id="even-same-middle"),
        pytest.param(["N/A", "5", None, "2"], "2", True, id="abstain-and-failed-left-out"),
        pytest.param(["N/A", "CANNOT_ASSESS"], "CANNOT_ASSESS", False, id="all-abstain"),
        pytest.param([None, None], None, False, id="all-failed"),
    ],
)
def test_ordinal_panels_take_the_median_option(votes, choice, tie):
    decision = combine_options(votes, LIKERT5)
    assert (decision.choice, decision.tie) == (choice, tie)


def test_on_a_negative_ordinal_criterion_the_worse_option_is_the_higher_value():
    negative = LIKERT5.model_copy(update={"weight": -5})
    assert combine_options(["2", "4"], negative).choice == "4"


@pytest.mark.parametrize(
    ("votes", "choice", "tie"),
    [
        pytest.param(["casual", "formal", "casual"], "casual", False, id="mode"),
        pytest.param(["formal", "rude", "casual"], "rude", True, id="three-way-tie-worst"),
        pytest.param(["formal", "casual"], "casual", True, id="tie-worse-value"),
    ],
)
def test_nominal_panels_take_the_most_chosen_option(votes, choice, tie):
    decision = combine_options(votes, TONE3)
    assert (decision.choice, decision.tie) == (choice, tie)
    assert "most chosen" in decision.note


def test_a_vote_that_is_no_option_is_refused():
    with pytest.raises(ValueError, match="not an option"):
        combine_options(["formal", "polite"], TONE3)


# -- issue 40.15: weights whose sum overflows ----------------------------------------------
def test_new_weights_past_the_bounds_are_refused_with_the_member_and_what_to_do():
    from grading.panels import check_weights

    with pytest.raises(ValueError, match=r"member 2: weight must be between 1e-06 and "
                                         r"1,000,000, got 1e\+308; only the members' ratios"):
        check_weights([1.0, 1e308], 2)
    with pytest.raises(ValueError, match="member 1: weight must be between"):
        check_weights([1e-9, 1.0], 2)
    assert check_weights([1e-6, 1e6], 2) == [1e-6, 1e6]


@pytest.mark.parametrize("weights", [
    pytest.param([1e308, 1e308, 1e308], id="each-huge"),
    pytest.param([1.7e308, 1e308, 1.0], id="sum-overflows"),
])
def test_a_stored_panel_with_huge_weights_still_decides_without_nan(weights):
    decision = combine_verdicts(["MET"] * 3, "weighted", criterion_weight=5, weights=weights)
    assert decision.verdict is Verdict.MET
    assert "nan" not in decision.note and "inf" not in decision.note
    split = combine_verdicts(["MET", "UNMET", "UNMET"], "weighted", criterion_weight=5,
                             weights=[1.7e308, 1e308, 1e308])
    assert split.verdict is Verdict.UNMET  # the ratios are kept: UNMET holds 2e308 of 3.7e308


# -- the multi-choice rule in words (issue 34) -----------------------------------------------
def test_the_ordinal_rule_in_words_says_median_and_which_way_a_tie_goes():
    from grading.panels import option_rule_text, rule_text

    text = option_rule_text(LIKERT5)
    assert text.startswith("Ordinal: the median") and "(the lower value)" in text
    assert rule_text("weighted", LIKERT5) == text  # the MET/UNMET rule does not apply
    assert combine_options(["2", "4"], LIKERT5).choice == "2"  # what the words say


def test_on_a_penalty_the_rule_in_words_says_the_higher_value_as_the_panel_does():
    from grading.panels import option_rule_text

    penalty = LIKERT5.model_copy(update={"weight": -5})
    assert "the higher value: this is a penalty" in option_rule_text(penalty)
    assert combine_options(["2", "4"], penalty).choice == "4"
    nominal_penalty = TONE3.model_copy(update={"weight": -1})
    assert option_rule_text(nominal_penalty).startswith("Nominal: the option most members")
    assert combine_options(["formal", "rude"], nominal_penalty).choice == "formal"


def test_the_nominal_rule_in_words_says_most_chosen_and_ties_to_the_worse():
    from grading.panels import option_rule_text

    text = option_rule_text(TONE3)
    assert "most members chose" in text and "the worse one (the lower value" in text
    assert combine_options(["formal", "casual"], TONE3).choice == "casual"


def test_a_binary_criterion_gets_its_panel_rule_in_words():
    from grading.panels import option_rule_text, rule_text

    positive, penalty = Criterion(requirement="Cites"), Criterion(requirement="Lies", weight=-3)
    assert rule_text("majority", positive).endswith("a tie is undecided: CANNOT_ASSESS.")
    assert rule_text("majority", penalty, LOWER_SCORE).endswith(
        "a tie goes to MET (the lower score; the rule of panels created before ties were "
        "undecided).")
    assert rule_text("any", positive) == "Any: MET as soon as one member says MET."
    with pytest.raises(ValueError, match="unknown panel rule 'most'"):
        rule_text("most", positive)
    with pytest.raises(ValueError, match="for multi-choice criteria"):
        option_rule_text(positive)
