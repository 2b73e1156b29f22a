"""Judge panels: several judges' verdicts on one criterion -> one verdict, by a stated rule.

A panel's score is never computed here: the panel's verdicts go through the one aggregation
function (``grading.aggregation``) like any other verdicts.

Rules (each member has a weight, 1 unless the rule is ``weighted``):
- ``majority`` / ``weighted``: a verdict wins with **more than half of all members' weight**.
  A member that failed (no verdict) or answered CANNOT_ASSESS abstains, and its weight stays
  in the denominator, so a parse failure cannot turn an odd panel into a tie.
- ``unanimous``: MET only when every member says MET; UNMET as soon as one says UNMET.
- ``any``: MET as soon as one member says MET; UNMET when someone says UNMET and nobody MET.

Multi-choice criteria (``combine_options``): ordinal ones take the median option by value
(an even split between two options goes to the worse one), nominal ones the most chosen
option (a tie goes to the worse option); NA options and CANNOT_ASSESS abstain. The worse
option is the one with the lower score: the lower value on a positive criterion, the higher
value on a penalty (negative weight: a higher value takes more off), the first listed among
equal values. Every member counts once (member weights are for MET/UNMET). The rule in words:
``option_rule_text`` / ``MULTI_CHOICE_RULE``.

When MET and UNMET hold equal weight and neither wins, the panel is **undecided**:
CANNOT_ASSESS, by the one tie rule samples of one judge follow too (``grading.ties``: why),
as the decision's ``note`` says. Panels created before that rule keep theirs, the verdict
with the lower score (``tie_rule=LOWER_SCORE``), so their stored results read back as they
did. When abstentions leave no majority and no tie, the panel abstains (CANNOT_ASSESS).
When every member failed, the panel has no verdict.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Literal, get_args

from grading.panel_decision import _OUTCOMES, MAX_PENDING_TRIED, PanelDecision
from grading.panel_options import (
    MULTI_CHOICE_RULE,
    OptionDecision,
    combine_options,
    combine_options_with_pending,
    option_rule_text,
)
from grading.ties import UNDECIDED, TieRule, binary_tie, lower_score_verdict, tie_rule_text
from grading.types import Criterion, Verdict

PanelRule = Literal["majority", "unanimous", "any", "weighted"]
PANEL_RULES: tuple[str, ...] = get_args(PanelRule)


# Re-exported: grading.ties holds the one tie rule, grading.panel_options the option rule,
# grading.panel_decision the decision's shape; callers import them from here.
__all__ = ["MAX_PENDING_TRIED", "MULTI_CHOICE_RULE", "OptionDecision", "PanelDecision",
           "combine_options", "combine_options_with_pending", "lower_score_verdict",
           "option_rule_text"]


# Only the ratios of members' weights matter; the bounds keep every sum of weights finite
# and exact enough (two weights of 1e308 added up to infinity, and MET turned into "nan").
MIN_MEMBER_WEIGHT = 1e-6
MAX_MEMBER_WEIGHT = 1e6


def check_weights(weights: Sequence[float], members: int, *, bounded: bool = True
                  ) -> list[float]:
    """Validate member weights; the message says which member is wrong. ``bounded=False``
    accepts any positive finite weight (a panel an older release stored)."""
    if len(weights) != members:
        raise ValueError(f"{members} panel members but {len(weights)} weights")
    checked = []
    for index, weight in enumerate(weights, start=1):
        if not isinstance(weight, int | float) or isinstance(weight, bool):
            raise ValueError(f"member {index}: weight must be a number, got {weight!r}")
        if not math.isfinite(weight) or weight <= 0:
            raise ValueError(f"member {index}: weight must be a positive number, got {weight}")
        if bounded and not MIN_MEMBER_WEIGHT <= weight <= MAX_MEMBER_WEIGHT:
            raise ValueError(
                f"member {index}: weight must be between {MIN_MEMBER_WEIGHT:g} and "
                f"{MAX_MEMBER_WEIGHT:,.0f}, got {weight:g}; only the members' ratios matter, "
                "so scale them all down (or up)")
        checked.append(float(weight))
    return checked


def _finite_sums(weights: list[float]) -> list[float]:
    """The weights scaled so that their sum is finite (ratios kept), when it is not."""
    if math.isfinite(sum(weights)):
        return weights
    largest = max(weights)
    return [w / largest for w in weights]


def combine_verdicts(
    votes: Sequence[Verdict | str | None],
    rule: PanelRule,
    *,
    criterion_weight: float,
    weights: Sequence[float] | None = None,
    tie_rule: TieRule = UNDECIDED,
) -> PanelDecision:
    """Combine the members' verdicts on one criterion (None: that member failed)."""
    if rule not in PANEL_RULES:
        raise ValueError(f"unknown panel rule {rule!r}; use one of {', '.join(PANEL_RULES)}")
    if len(votes) < 2:
        raise ValueError(f"a panel needs at least two members, got {len(votes)}")
    if rule == "weighted":
        if weights is None:
            raise ValueError("the weighted rule needs a weight per member")
        member_weights = _finite_sums(check_weights(weights, len(votes), bounded=False))
    else:
        if weights is not None and any(w != 1 for w in weights):
            raise ValueError(f"the {rule} rule counts every member once; weights are only "
                             "for the weighted rule")
        member_weights = [1.0] * len(votes)

    parsed = [None if v is None else Verdict.parse(v) for v in votes]
    met = sum(w for v, w in zip(parsed, member_weights, strict=True) if v is Verdict.MET)
    unmet = sum(w for v, w in zip(parsed, member_weights, strict=True) if v is Verdict.UNMET)
    total = sum(member_weights)
    abstained = total - met - unmet
    failed = sum(1 for v in parsed if v is None)

    def decide(verdict: Verdict | None, note: str, *, tie: bool = False) -> PanelDecision:
        return PanelDecision(verdict, met, unmet, abstained, failed, tie, note)

    tally = _tally(met, unmet, abstained, rule)
    if failed == len(parsed):
        return decide(None, f"every member failed ({failed} of {len(parsed)}): no verdict")
    if rule in ("majority", "weighted"):
        if met > total / 2:
            return decide(Verdict.MET, f"majority MET ({tally})")
        if unmet > total / 2:
            return decide(Verdict.UNMET, f"majority UNMET ({tally})")
        if met == unmet and met > 0:
            verdict, note = binary_tie(tally, criterion_weight=criterion_weight,
                                       rule=tie_rule)
            return decide(verdict, note, tie=True)
        return decide(Verdict.CANNOT_ASSESS, f"no majority ({tally}): the panel abstains")
    if rule == "unanimous":
        if met == total:
            return decide(Verdict.MET, f"unanimous MET ({tally})")
        if unmet > 0:
            return decide(Verdict.UNMET, f"not unanimous ({tally}): UNMET")
        return decide(Verdict.CANNOT_ASSESS,
                      f"not unanimous ({tally}): abstentions, the panel abstains")
    # any
    if met > 0:
        return decide(Verdict.MET, f"at least one MET ({tally})")
    if unmet > 0:
        return decide(Verdict.UNMET, f"no member MET ({tally})")
    return decide(Verdict.CANNOT_ASSESS, f"every member abstained ({tally})")


def _tally(met: float, unmet: float, abstained: float, rule: str) -> str:
    def fmt(value: float) -> str:
        return f"{value:g}"

    unit = " weight" if rule == "weighted" else ""
    return f"MET {fmt(met)}, UNMET {fmt(unmet)}, abstained {fmt(abstained)}{unit}"


def combine_members(
    member_verdicts: Sequence[Sequence[Verdict | str | None]],
    rule: PanelRule,
    *,
    criterion_weights: Sequence[float],
    weights: Sequence[float] | None = None,
    tie_rule: TieRule = UNDECIDED,
) -> list[PanelDecision]:
    """Combine whole responses: one list of per-criterion verdicts per member."""
    for index, verdicts in enumerate(member_verdicts, start=1):
        if len(verdicts) != len(criterion_weights):
            raise ValueError(f"member {index} has {len(verdicts)} verdicts for "
                             f"{len(criterion_weights)} criteria")
    return [
        combine_verdicts([member[i] for member in member_verdicts], rule,
                         criterion_weight=cw, weights=weights, tie_rule=tie_rule)
        for i, cw in enumerate(criterion_weights)
    ]


def rule_text(rule: PanelRule, criterion: Criterion, tie_rule: TieRule = UNDECIDED) -> str:
    """How a panel with this rule decides this criterion, in words: the MET/UNMET rule for
    a binary criterion, the option rule for a multi-choice one."""
    if criterion.options is not None:
        return option_rule_text(criterion)
    if rule not in PANEL_RULES:
        raise ValueError(f"unknown panel rule {rule!r}; use one of {', '.join(PANEL_RULES)}")
    tie = tie_rule_text(tie_rule, criterion.weight)
    return {
        "majority": "Majority: a verdict needs more than half of all members; a failed or "
                    f"abstaining member still counts; {tie}.",
        "weighted": "Weighted majority: a verdict needs more than half of the members' "
                    f"weight; {tie}.",
        "unanimous": "Unanimous: MET only when every member says MET; one UNMET makes it "
                     "UNMET.",
        "any": "Any: MET as soon as one member says MET.",
    }[rule]


def combine_with_pending(
    votes: Sequence[Verdict | str | None],
    pending: Sequence[bool],
    rule: PanelRule,
    *,
    criterion_weight: float,
    weights: Sequence[float] | None = None,
    waiting_for: str = "",
    tie_rule: TieRule = UNDECIDED,
) -> PanelDecision:
    """Combine while some members have not graded yet (``pending[i]``: member i is still
    grading; its vote is ignored). A member still grading is never counted as failed: the
    verdict is given only when every answer it may still give (or its failure) leads to the
    same decision; otherwise the decision is ``verdict=None``, undecided, saying whom it
    waits for."""
    if not any(pending):
        return combine_verdicts(votes, rule, criterion_weight=criterion_weight,
                                weights=weights, tie_rule=tie_rule)
    slots = [i for i, waiting in enumerate(pending) if waiting]
    who = waiting_for or "the members still grading"
    # What is known so far (the members still grading neither vote nor count as failed).
    known = combine_verdicts([None if waiting else v for v, waiting in
                              zip(votes, pending, strict=True)], rule,
                             criterion_weight=criterion_weight, weights=weights,
                             tie_rule=tie_rule)
    abstained = known.abstained - _weight_of(slots, weights)
    so_far = _tally(known.met, known.unmet, abstained, rule)
    failed = known.failed - len(slots)
    outcomes: set[tuple[Verdict | None, bool]] = set()
    if len(slots) <= MAX_PENDING_TRIED:
        for answers in itertools.product(_OUTCOMES, repeat=len(slots)):
            trial = list(votes)
            for slot, answer in zip(slots, answers, strict=True):
                trial[slot] = answer
            decision = combine_verdicts(trial, rule, criterion_weight=criterion_weight,
                                        weights=weights, tie_rule=tie_rule)
            outcomes.add((decision.verdict, decision.tie))
            if len(outcomes) > 1:
                break
    if len(outcomes) == 1:
        [(verdict, tie)] = outcomes
        if verdict is not None:
            return PanelDecision(verdict, known.met, known.unmet, abstained, failed, tie,
                                 f"{verdict.value} whatever {who} answer(s) ({so_far})")
    return PanelDecision(None, known.met, known.unmet, abstained, failed, False,
                         f"undecided: waiting for {who} to grade ({so_far} so far)")


def _weight_of(slots: Sequence[int], weights: Sequence[float] | None) -> float:
    return float(len(slots)) if weights is None else sum(float(weights[i]) for i in slots)


