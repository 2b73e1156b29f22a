"""The one tie rule for MET/UNMET votes: several samples of one judge (grading.samples) and
the members of a panel (grading.panels) both come here when MET and UNMET are tied.

**A tie is undecided.** When the votes split evenly the judges have not decided, and the
verdict says so: CANNOT_ASSESS, scored by the CANNOT_ASSESS strategy of whoever scores it
(skip, zero, partial credit or fail: a team that wants a split to count against the
response picks "zero" or "fail"), and listed where undecided verdicts are (a reviewer's hard
cases). Resolving it to a side would present a coin-flip as a finding: toward the lower
score it hides that the judges split, and a split on a penalty criterion ("harmful") would
take the penalty off the score as if the harm were established.

``LOWER_SCORE`` is the rule panels used before this one (the verdict with the lower score):
panels created then keep it, so their stored results read back as they always did.
"""

from __future__ import annotations

from typing import Literal, get_args

from grading.types import Verdict

TieRule = Literal["undecided", "lower_score"]
TIE_RULES: tuple[str, ...] = get_args(TieRule)
UNDECIDED: TieRule = "undecided"
LOWER_SCORE: TieRule = "lower_score"  # panels created before the one rule


def lower_score_verdict(criterion_weight: float) -> Verdict:
    """The verdict that gives the lower score for a criterion of this weight."""
    return Verdict.MET if criterion_weight < 0 else Verdict.UNMET


def binary_tie(tally: str, *, criterion_weight: float, rule: TieRule = UNDECIDED
               ) -> tuple[Verdict, str]:
    """(verdict, note) for MET and UNMET tied; ``tally`` is the count in words."""
    if rule not in TIE_RULES:
        raise ValueError(f"unknown tie rule {rule!r}; use one of {', '.join(TIE_RULES)}")
    if rule == LOWER_SCORE:
        lower = lower_score_verdict(criterion_weight)
        return lower, f"tie ({tally}): {lower.value}, the verdict with the lower score"
    return Verdict.CANNOT_ASSESS, f"tie ({tally}): undecided, CANNOT_ASSESS"


def tie_rule_text(rule: TieRule, criterion_weight: float) -> str:
    """The rule in words, for a panel's or a run's explanation."""
    if rule == LOWER_SCORE:
        return (f"a tie goes to {lower_score_verdict(criterion_weight).value} (the lower "
                "score; the rule of panels created before ties were undecided)")
    return "a tie is undecided: CANNOT_ASSESS"
