"""Multi-choice criteria in a panel while members are still grading
(grading.panel_options.combine_options_with_pending): an option only when no answer of the pending
members (any option, an abstention, or a failure) could change it; the label is carried in
the decision's ``option`` and ``choice``."""

from __future__ import annotations

import pytest

from grading import Verdict
from grading.options import CriterionOption as O
from grading.panels import combine_options, combine_options_with_pending
from grading.types import Criterion

LIKERT = Criterion(requirement="How clear?", weight=5, options=tuple(
    O(label=label, value=v) for label, v in
    [("Poor", 0.0), ("Fair", 0.25), ("Good", 0.5), ("Very good", 0.75), ("Excellent", 1.0)]))
TONE = Criterion(requirement="Which tone?", weight=2, scale_type="nominal", options=(
    O(label="formal", value=1.0), O(label="casual", value=0.5),
    O(label="no text", value=0.0, na=True)))
P = None  # a pending member's slot


@pytest.mark.parametrize(("votes", "pending", "criterion", "expected"), [
    pytest.param(["Good", "Fair", P], [0, 0, 1], LIKERT, None, id="median-split-waits"),
    pytest.param(["Good", "Good", P], [0, 0, 1], LIKERT, "Good", id="median-two-of-three-holds"),
    pytest.param(["Good", "Good", P, P], [0, 0, 1, 1], LIKERT, None,
                 id="median-two-of-four-waits"),
    pytest.param(["formal", "formal", P], [0, 0, 1], TONE, "formal", id="mode-holds"),
    pytest.param(["formal", "casual", P], [0, 0, 1], TONE, None, id="mode-split-waits"),
    pytest.param(["Poor", "Excellent", "Good"], [0, 0, 0], LIKERT, "Good", id="nobody-pending"),
])
def test_a_pending_member_decides_only_what_it_could_still_change(
        votes, pending, criterion, expected):
    decision = combine_options_with_pending(votes, [bool(p) for p in pending], criterion,
                                            waiting_for="run #9")
    assert decision.choice == expected
    if expected is None:
        assert decision.verdict is None
        assert decision.note.startswith("undecided: waiting for run #9 to grade")
    else:
        assert (decision.verdict, decision.option) == (Verdict.MET, expected)
    if not any(pending):
        assert decision.note == combine_options(votes, criterion).note


def test_every_member_abstaining_makes_the_panel_abstain_with_no_option():
    decision = combine_options_with_pending(["no text", "CANNOT_ASSESS"], [False, False], TONE)
    assert (decision.verdict, decision.option, decision.choice) == (
        Verdict.CANNOT_ASSESS, None, Verdict.CANNOT_ASSESS)
    assert (decision.met, decision.abstained, decision.failed) == (0, 2, 0)


def test_too_many_pending_members_to_try_every_answer_leave_it_undecided():
    # 7 answers each (5 options, CANNOT_ASSESS, a failure) for 4 pending members is beyond
    # the budget of MET/UNMET's 4**5 trials: undecided, never a guess
    votes = ["Good"] * 6 + [P] * 4
    decision = combine_options_with_pending(votes, [False] * 6 + [True] * 4, LIKERT)
    assert decision.choice is None
    # 3 pending members (343 trials) are tried: six Goods of nine hold the median
    decision = combine_options_with_pending(votes[:9], [False] * 6 + [True] * 3, LIKERT)
    assert decision.choice == "Good"


def test_a_binary_criterion_is_refused():
    with pytest.raises(ValueError, match="for multi-choice criteria"):
        combine_options_with_pending(["MET", "MET"], [False, False],
                                     Criterion(requirement="x", weight=1))
