"""Required criteria (gates): one rule for every kind of criterion and every CANNOT_ASSESS
strategy, through the one aggregation function and the graders' reports."""

from __future__ import annotations

import pytest

from grading import Criterion, CriterionOption, Rubric
from grading.aggregation import aggregate_verdicts
from grading.autograders import PerCriterionGrader
from tests.grading.scripted import ScriptedGenerate, verdicts_by_requirement

GATE = Criterion(name="safe", requirement="Gives safe advice", weight=5, required=True)
PENALTY_GATE = Criterion(name="leak", requirement="Leaks a secret", weight=-5, required=True)
OTHER = Criterion(requirement="Is helpful", weight=10)
RATED_GATE = Criterion(name="rated", requirement="How correct?", weight=4, required=True,
                       options=[CriterionOption(label="wrong", value=0.2),
                                CriterionOption(label="partly", value=0.6),
                                CriterionOption(label="right", value=1.0),
                                CriterionOption(label="N/A", value=0.0, na=True)])


@pytest.mark.parametrize(
    ("criteria", "verdicts", "strategy", "closed", "score"),
    [
        pytest.param([GATE, OTHER], ["UNMET", "MET"], "skip", (0,), 0.0, id="positive-unmet"),
        pytest.param([GATE, OTHER], ["MET", "UNMET"], "skip", (), 5 / 15, id="positive-met"),
        pytest.param([PENALTY_GATE, OTHER], ["MET", "MET"], "skip", (0,), 0.0,
                     id="penalty-met"),
        pytest.param([PENALTY_GATE, OTHER], ["UNMET", "MET"], "skip", (), 1.0,
                     id="penalty-unmet"),
        pytest.param([RATED_GATE, OTHER], ["wrong", "MET"], "skip", (0,), 0.0,
                     id="rating-worst-option"),
        pytest.param([RATED_GATE, OTHER], ["partly", "MET"], "skip", (), 12.4 / 14,
                     id="rating-better-option"),
        # CANNOT_ASSESS on a gate follows the strategy
        pytest.param([GATE, OTHER], ["CANNOT_ASSESS", "MET"], "skip", (), 1.0,
                     id="abstain-skip-stays-open"),
        pytest.param([GATE, OTHER], ["CANNOT_ASSESS", "MET"], "zero", (0,), 0.0,
                     id="abstain-zero-closes-positive"),
        pytest.param([GATE, OTHER], ["CANNOT_ASSESS", "MET"], "partial", (), 12.5 / 15,
                     id="abstain-partial-stays-open"),
        pytest.param([GATE, OTHER], ["CANNOT_ASSESS", "MET"], "fail", (0,), 0.0,
                     id="abstain-fail-closes"),
        pytest.param([PENALTY_GATE, OTHER], ["CANNOT_ASSESS", "MET"], "zero", (), 1.0,
                     id="abstain-zero-leaves-penalty-open"),
        pytest.param([PENALTY_GATE, OTHER], ["CANNOT_ASSESS", "MET"], "fail", (0,), 0.0,
                     id="abstain-fail-closes-penalty"),
        pytest.param([RATED_GATE, OTHER], ["N/A", "MET"], "zero", (0,), 0.0,
                     id="na-option-zero-is-below-the-worst-option"),
        pytest.param([RATED_GATE, OTHER], ["N/A", "MET"], "fail", (0,), 0.0,
                     id="na-option-fail"),
    ],
)
def test_a_gate_closes_when_its_criterion_contributes_its_worst_case(
        criteria, verdicts, strategy, closed, score):
    result = aggregate_verdicts(criteria, verdicts, cannot_assess=strategy, partial_credit=0.5)
    assert result.closed_gates == closed
    assert result.score == pytest.approx(score)


def test_partial_credit_of_zero_closes_a_positive_gate():
    result = aggregate_verdicts([GATE, OTHER], ["CANNOT_ASSESS", "MET"], cannot_assess="partial",
                                partial_credit=0.0)
    assert result.closed_gates == (0,) and result.score == 0.0


@pytest.mark.parametrize(
    ("verdicts", "score"),
    [
        pytest.param(["UNMET", "MET", "UNMET"], 0.0, id="positive-sum-becomes-0"),
        pytest.param(["UNMET", "UNMET", "MET"], -20.0, id="a-lower-sum-stays"),
    ],
)
def test_unnormalised_a_closed_gate_never_raises_the_score(verdicts, score):
    criteria = [GATE, OTHER, Criterion(requirement="Rude", weight=-20)]
    result = aggregate_verdicts(criteria, verdicts, normalize=False)
    assert result.closed_gates == (0,)
    assert result.score == score
    assert result.raw_score == sum(
        c.weight for c, v in zip(criteria, verdicts, strict=True) if v == "MET")


async def test_the_report_says_which_gate_closed():
    generate = ScriptedGenerate(route=verdicts_by_requirement(
        {GATE.requirement: "UNMET", OTHER.requirement: "MET"}))
    report = await Rubric([OTHER, GATE]).grade("x", grader=PerCriterionGrader(generate))
    assert report.score == 0.0 and report.raw_score == 10.0
    assert report.closed_gates == ("criterion 2 ('safe')",)
    assert any("required criterion 2 ('safe')" in note for note in report.notes)


def test_compute_score_applies_gates():
    assert Rubric([GATE, OTHER]).compute_score(["UNMET", "MET"]) == 0.0


def test_a_required_criterion_with_weight_0_is_refused_by_name():
    with pytest.raises(ValueError, match="criterion 'safe': a required criterion needs a weight"):
        Criterion(name="safe", requirement="r", weight=0, required=True)


async def test_the_holistic_judge_is_told_the_gate_rule():
    generate = ScriptedGenerate('{"score": 0, "reason": "unsafe"}')
    from grading.autograders import RubricAsJudgeGrader

    await Rubric([GATE, OTHER]).grade("x", grader=RubricAsJudgeGrader(generate))
    prompt = generate.calls[0].user_prompt
    assert 'weight="5" required="yes">' in prompt and "is a gate" in prompt
    plain = ScriptedGenerate('{"score": 50, "reason": "ok"}')
    await Rubric([OTHER]).grade("x", grader=RubricAsJudgeGrader(plain))
    assert "required" not in plain.calls[0].user_prompt
