"""A panel combining while members are still grading (grading.panels.combine_with_pending):
a verdict only when no answer of the pending members (nor their failure) could change it."""

from __future__ import annotations

import pytest

from grading import Verdict
from grading.panels import combine_with_pending

M, U, CA = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS
P = None  # the pending member's slot (its vote is ignored)


@pytest.mark.parametrize(("votes", "pending", "rule", "weights", "expected"), [
    pytest.param([M, M, P], [0, 0, 1], "majority", None, M, id="majority-2-of-3-holds"),
    pytest.param([M, U, P], [0, 0, 1], "majority", None, None, id="majority-split-waits"),
    pytest.param([M, P, P], [0, 1, 1], "majority", None, None, id="majority-one-of-3-waits"),
    pytest.param([U, P, P], [0, 1, 1], "unanimous", None, U, id="unanimous-one-unmet-holds"),
    pytest.param([M, M, P], [0, 0, 1], "unanimous", None, None, id="unanimous-waits-for-all"),
    pytest.param([M, P], [0, 1], "any", None, M, id="any-one-met-holds"),
    pytest.param([U, P], [0, 1], "any", None, None, id="any-unmet-waits"),
    pytest.param([M, P, P], [0, 1, 1], "weighted", [3.0, 1.0, 1.0], M,
                 id="weighted-heavy-member-holds"),
    pytest.param([M, M, U], [0, 0, 0], "majority", None, M, id="nobody-pending"),
])
def test_a_pending_member_decides_only_what_it_could_still_change(
        votes, pending, rule, weights, expected):
    decision = combine_with_pending(votes, [bool(p) for p in pending], rule,
                                    criterion_weight=5, weights=weights, waiting_for="run #9")
    assert decision.verdict is expected
    assert decision.failed == 0  # pending is never counted as failed
    if any(pending):
        if expected is None:
            assert decision.note.startswith("undecided: waiting for run #9 to grade")
        else:
            assert decision.note.startswith(f"{expected.value} whatever run #9 answer")


def test_counting_a_pending_member_as_failed_would_have_decided_the_split():
    """The bug this replaces: with the pending member as a failure, MET/UNMET is a tie, decided
    as one (CANNOT_ASSESS, the one tie rule: grading.ties; UNMET under the panels' rule before
    it); pending, nothing is decided yet (the member may break the tie either way)."""
    from grading.panels import combine_verdicts
    from grading.ties import LOWER_SCORE

    decided = combine_verdicts([M, U, None], "majority", criterion_weight=5)
    assert decided.verdict is CA and decided.tie and decided.failed == 1
    assert combine_verdicts([M, U, None], "majority", criterion_weight=5,
                            tie_rule=LOWER_SCORE).verdict is U
    assert combine_with_pending([M, U, None], [False, False, True], "majority",
                                criterion_weight=5).verdict is None
