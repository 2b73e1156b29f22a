"""Table tests for the one aggregation function and the holistic conversion."""

from __future__ import annotations

import pytest

from grading import Criterion, LengthPenalty, ScoringSettings, Verdict
from grading.aggregation import aggregate_verdicts, holistic_to_scores, score_verdicts

MET, UNMET, CA = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS


def crit(*weights: float) -> list[Criterion]:
    return [Criterion(weight=w, requirement=f"requirement {i}") for i, w in enumerate(weights)]


@pytest.mark.parametrize(
    ("weights", "verdicts", "options", "score", "raw"),
    [
        pytest.param([10, 5, -3], [MET, UNMET, MET], {}, 0.466667, 7.0, id="reference-mixed"),
        pytest.param([-4, -6], [MET, UNMET], {}, 0.6, -4.0, id="reference-all-negative"),
        pytest.param([10, 5, -3], [MET, MET, UNMET], {}, 1.0, 15.0, id="all-positive-met"),
        pytest.param([10, 5, -3], [UNMET, UNMET, MET], {}, 0.0, -3.0, id="clamped-at-zero"),
        pytest.param([-4, -6], [UNMET, UNMET], {}, 1.0, 0.0, id="all-negative-no-errors"),
        pytest.param([-4, -6], [MET, MET], {}, 0.0, -10.0, id="all-negative-all-errors"),
        pytest.param([10, 5, -3], [MET, UNMET, MET], {"normalize": False}, 7.0, 7.0,
                     id="raw-mode"),
        pytest.param([10, -30], [MET, MET], {"normalize": False}, -20.0, -20.0,
                     id="raw-mode-negative-unclamped"),
        pytest.param([10, 0, 5], [MET, MET, UNMET], {}, 10 / 15, 10.0,
                     id="zero-weight-not-scored"),
        # CANNOT_ASSESS strategies on [10, 5, -3]
        pytest.param([10, 5, -3], [MET, CA, UNMET], {"cannot_assess": "skip"}, 1.0, 10.0,
                     id="skip-out-of-denominator"),
        pytest.param([10, 5, -3], [MET, CA, UNMET], {"cannot_assess": "zero"}, 10 / 15, 10.0,
                     id="zero-kept-in-denominator"),
        pytest.param([10, 5, -3], [MET, CA, UNMET], {"cannot_assess": "partial"}, 12.5 / 15,
                     12.5, id="partial-default-half"),
        pytest.param([10, 5, -3], [MET, CA, UNMET],
                     {"cannot_assess": "partial", "partial_credit": 0.2}, 11 / 15, 11.0,
                     id="partial-custom-fraction"),
        pytest.param([10, 5, -3], [MET, CA, UNMET], {"cannot_assess": "fail"}, 10 / 15, 10.0,
                     id="fail-positive-is-unmet"),
        pytest.param([10, 5, -3], [MET, UNMET, CA], {"cannot_assess": "fail"}, 7 / 15, 7.0,
                     id="fail-negative-is-met"),
        pytest.param([10, 5, -3], [MET, UNMET, CA], {"cannot_assess": "partial"}, 10 / 15,
                     10.0, id="partial-negative-contributes-nothing"),
        pytest.param([10, 5, -3], [MET, UNMET, CA], {"cannot_assess": "zero"}, 10 / 15, 10.0,
                     id="zero-negative-contributes-nothing"),
        pytest.param([-4, -6], [CA, MET], {"cannot_assess": "skip"}, 0.0, -6.0,
                     id="skip-all-negative-shrinks-denominator"),
        pytest.param([-4, -6], [CA, UNMET], {"cannot_assess": "fail"}, 0.6, -4.0,
                     id="fail-all-negative"),
        pytest.param([10, -5], [CA, MET], {"cannot_assess": "skip"}, 0.0, -5.0,
                     id="skip-leaves-only-negatives"),
        pytest.param([10, 5], [CA, MET], {"cannot_assess": "skip", "normalize": False}, 5.0,
                     5.0, id="skip-raw-mode"),
    ],
)
def test_aggregate_table(weights, verdicts, options, score, raw):
    result = aggregate_verdicts(crit(*weights), verdicts, **options)
    assert result.score == pytest.approx(score, abs=1e-6)
    assert result.raw_score == pytest.approx(raw)


@pytest.mark.parametrize(
    ("weights", "verdicts", "strategy"),
    [
        pytest.param([10, 5], [CA, CA], "skip", id="all-cannot-assess-skipped"),
        pytest.param([0, 0], [MET, UNMET], "skip", id="all-zero-weights"),
        pytest.param([0, 5], [MET, CA], "skip", id="zero-weight-and-skipped"),
    ],
)
def test_nothing_left_to_score_gives_none_not_zero(weights, verdicts, strategy):
    for normalize in (True, False):
        result = aggregate_verdicts(
            crit(*weights), verdicts, cannot_assess=strategy, normalize=normalize
        )
        assert result.score is None
        assert result.raw_score is None
        assert result.scored_count == 0


def test_all_cannot_assess_with_zero_strategy_scores_zero():
    result = aggregate_verdicts(crit(10, 5), [CA, CA], cannot_assess="zero")
    assert result.score == 0.0
    assert result.cannot_assess_count == 2


def test_empty_rubric_has_no_score():
    result = aggregate_verdicts([], [])
    assert result.score is None and result.raw_score is None


def test_verdicts_may_be_written_as_text_in_any_case():
    result = aggregate_verdicts(crit(10, 0, 5), ["met", " cannot assess ", "Unmet"])
    assert result.score == pytest.approx(10 / 15)
    assert result.cannot_assess_count == 1


def test_counts_cannot_assess_verdicts():
    result = aggregate_verdicts(crit(10, 5, -3), [CA, MET, CA])
    assert result.cannot_assess_count == 2
    assert result.scored_count == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"cannot_assess": "ignore"}, "unknown CANNOT_ASSESS strategy", id="strategy"),
        pytest.param({"partial_credit": 1.5}, "partial_credit", id="partial-credit"),
    ],
)
def test_invalid_settings_are_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        aggregate_verdicts(crit(10), [MET], **kwargs)


def test_verdict_count_must_match():
    with pytest.raises(ValueError, match="2 criteria but 1 verdicts"):
        aggregate_verdicts(crit(10, 5), [MET])


def test_unknown_verdict_is_an_error():
    with pytest.raises(ValueError, match="verdict must be MET, UNMET or CANNOT_ASSESS"):
        aggregate_verdicts(crit(10), ["maybe"])


@pytest.mark.parametrize(
    ("weights", "llm", "normalize", "score", "raw"),
    [
        pytest.param([10, 5, -3], 85, True, 0.85, 12.75, id="reference-85"),
        pytest.param([10, 5, -3], 85, False, 12.75, 12.75, id="raw-mode"),
        pytest.param([-4, -6], 60, True, 0.6, -4.0, id="all-negative"),
        pytest.param([-4, -6], 100, False, 0.0, 0.0, id="all-negative-perfect-raw"),
        pytest.param([10], 0, True, 0.0, 0.0, id="zero"),
    ],
)
def test_holistic_conversion(weights, llm, normalize, score, raw):
    result = holistic_to_scores(crit(*weights), llm, normalize=normalize)
    assert result.score == pytest.approx(score)
    assert result.raw_score == pytest.approx(raw)


@pytest.mark.parametrize("llm", [-1, 100.5])
def test_holistic_out_of_range_is_an_error(llm):
    with pytest.raises(ValueError, match="between 0 and 100"):
        holistic_to_scores(crit(10), llm)


def test_score_verdicts_applies_penalty_after_aggregation():
    penalty = LengthPenalty(free_budget=10, max_cap=20, penalty_at_cap=0.5, exponent=1.6)
    settings = ScoringSettings(length_penalty=penalty)
    aggregate, amount, final = score_verdicts(
        crit(10, 5, -3), [MET, UNMET, MET], settings, to_grade=" ".join(["w"] * 15)
    )
    assert aggregate.score == pytest.approx(7 / 15)
    assert amount == pytest.approx(0.164938, abs=1e-6)
    assert final == pytest.approx(7 / 15 - 0.164938, abs=1e-6)


def test_score_verdicts_penalty_clamps_at_zero_only_when_normalized():
    penalty = LengthPenalty(free_budget=1, max_cap=2, penalty_at_cap=50.0)
    long_text = "one two three"
    _, _, normalized = score_verdicts(
        crit(10), [MET], ScoringSettings(length_penalty=penalty), long_text
    )
    _, _, raw = score_verdicts(
        crit(10), [MET], ScoringSettings(normalize=False, length_penalty=penalty), long_text
    )
    assert normalized == 0.0
    assert raw == pytest.approx(-40.0)


def test_score_verdicts_without_penalty_or_score():
    aggregate, amount, final = score_verdicts(crit(10), [CA], ScoringSettings(), "text")
    assert amount is None and final is None and aggregate.score is None
