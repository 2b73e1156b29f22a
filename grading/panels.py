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
from dataclasses import dataclass
from typing import Literal, get_args

from grading.options import find_option, worst_option_among
from grading.ties import UNDECIDED, TieRule, binary_tie, lower_score_verdict, tie_rule_text
from grading.types import Criterion, Verdict

PanelRule = Literal["majority", "unanimous", "any", "weighted"]
PANEL_RULES: tuple[str, ...] = get_args(PanelRule)


@dataclass(frozen=True)
class PanelDecision:
    """The panel's verdict on one criterion and how it was reached.

    ``verdict`` is None only when every member failed; ``tie`` says the votes were tied
    (the tie rule decided); ``note`` explains the decision in words a reviewer reads.
    """

    verdict: Verdict | None
    met: float
    unmet: float
    abstained: float
    failed: int
    tie: bool
    note: str
    # The chosen option's label on a multi-choice criterion (``verdict`` is then MET); None
    # on a binary criterion, when the panel abstains, or is undecided.
    option: str | None = None

    @property
    def choice(self) -> Verdict | str | None:
        """What the aggregation reads: the option label if one was chosen, else the verdict."""
        return self.option if self.option is not None else self.verdict


__all__ = ["lower_score_verdict"]  # re-exported: grading.ties holds the one tie rule


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


@dataclass(frozen=True)
class OptionDecision:
    """A panel's option on one multi-choice criterion: the label (None: every member failed,
    or every member abstained and the panel abstains with CANNOT_ASSESS in ``choice``)."""

    choice: str | None
    tie: bool
    note: str


def combine_options(votes: Sequence[str | None], criterion: Criterion) -> OptionDecision:
    """Ordinal criteria: the median option by value, ties to the worse option (the lower
    score for the weight's sign). Nominal criteria: the most chosen option, ties to the
    worse option. NA options and CANNOT_ASSESS abstain; None is a member that failed."""
    if criterion.options is None:
        raise ValueError("combine_options is for multi-choice criteria; use combine_verdicts")
    if len(votes) < 2:
        raise ValueError(f"a panel needs at least two members, got {len(votes)}")
    options = criterion.options
    chosen: list[int] = []
    abstained = failed = 0
    for vote in votes:
        if vote is None:
            failed += 1
            continue
        index = find_option(options, vote)
        if index is None and vote.strip().upper().replace(" ", "_") != "CANNOT_ASSESS":
            raise ValueError(f"{vote!r} is not an option of this criterion")
        if index is None or options[index].na:
            abstained += 1
        else:
            chosen.append(index)
    tally = (", ".join(f"{options[i].label} x{chosen.count(i)}" for i in sorted(set(chosen)))
             + f"; abstained {abstained}, failed {failed}")
    if failed == len(votes):
        return OptionDecision(None, False, f"every member failed ({failed}): no verdict")
    if not chosen:
        return OptionDecision("CANNOT_ASSESS", False, f"every member abstained ({tally})")
    if criterion.scale_type == "ordinal":
        # sorted worst first, so the lower middle of an even count is the worse option
        ranked = sorted(chosen, key=lambda i: (options[i].value * (1 if criterion.weight >= 0
                                                                   else -1), i))
        middle = (len(ranked) - 1) // 2
        tie = len(ranked) % 2 == 0 and options[ranked[middle]].value != options[
            ranked[middle + 1]].value
        pick = ranked[middle]
        rule = "median" + (", between two options: the worse one" if tie else "")
        return OptionDecision(options[pick].label, tie, f"{rule} ({tally})")
    counts = {i: chosen.count(i) for i in set(chosen)}
    top = max(counts.values())
    leaders = [i for i, n in counts.items() if n == top]
    pick = worst_option_among(options, criterion.weight, leaders)
    tie = len(leaders) > 1
    rule = "most chosen" + (", tied: the worse option" if tie else "")
    return OptionDecision(options[pick].label, tie, f"{rule} ({tally})")


# The rule for multi-choice criteria, in words a reviewer reads (the UI shows these).
MULTI_CHOICE_RULE = (
    "Multi-choice criteria: a rating (ordinal) takes the median of the members' options, a "
    "category (nominal) the option most members chose. A tie (an even split between two "
    "ratings, or two categories chosen equally often) goes to the option with the lower "
    "score: the lower value, or the higher value on a penalty (negative weight) criterion. "
    "NA options and CANNOT_ASSESS abstain; every member counts once, whatever the panel's "
    "MET/UNMET rule and weights.")


def option_rule_text(criterion: Criterion) -> str:
    """How ``combine_options`` decides this criterion, in words."""
    if criterion.options is None:
        raise ValueError("option_rule_text is for multi-choice criteria")
    worse = ("the higher value: this is a penalty (negative weight), so a higher value "
             "lowers the score more" if criterion.weight < 0 else "the lower value")
    if criterion.scale_type == "ordinal":
        head = ("Ordinal: the median of the members' options, ranked by value; when the "
                f"middle falls between two options, the worse one ({worse})")
    else:
        head = ("Nominal: the option most members chose; when options are tied, the worse "
                f"one ({worse}; the first listed among equal values)")
    return (head + ". NA options and CANNOT_ASSESS abstain and failed members are left out; "
            "when every member abstains, the panel abstains. Every member counts once.")


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


# Beyond this many members still grading, every outcome is not tried (4**n): left undecided.
MAX_PENDING_TRIED = 5
_OUTCOMES: tuple[Verdict | None, ...] = (Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS,
                                         None)


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


def _option_decision(decision: OptionDecision, votes: Sequence[str | None],
                     criterion: Criterion) -> PanelDecision:
    """``combine_options``' decision in a panel's shape (``met``: members who chose a scored
    option; a panel's option is never NA, as NA options abstain)."""
    failed = sum(1 for v in votes if v is None)
    scored = 0
    for vote in votes:
        index = None if vote is None else find_option(criterion.options or (), str(vote))
        scored += index is not None and not (criterion.options or ())[index].na
    abstained = len(votes) - failed - scored
    if decision.choice is None:
        verdict, option = None, None
    elif find_option(criterion.options or (), decision.choice) is None:
        verdict, option = Verdict.CANNOT_ASSESS, None
    else:
        verdict, option = Verdict.MET, decision.choice
    return PanelDecision(verdict, float(scored), 0.0, float(abstained), failed, decision.tie,
                         decision.note, option)


def combine_options_with_pending(
    votes: Sequence[Verdict | str | None],
    pending: Sequence[bool],
    criterion: Criterion,
    *,
    waiting_for: str = "",
) -> PanelDecision:
    """``combine_options`` as a :class:`PanelDecision` (the label in ``option``), while some
    members may still be grading (``pending[i]``; its vote is ignored): decided only when
    every option it may still choose (or an abstention, or a failure) leads to the same
    option; otherwise undecided (``verdict=None``), saying whom it waits for."""
    if criterion.options is None:
        raise ValueError("combine_options_with_pending is for multi-choice criteria")
    plain = [None if v is None else str(v) for v in votes]
    if not any(pending):
        return _option_decision(combine_options(plain, criterion), plain, criterion)
    slots = [i for i, waiting in enumerate(pending) if waiting]
    who = waiting_for or "the members still grading"
    known_votes = [None if waiting else v for v, waiting in zip(plain, pending, strict=True)]
    known = _option_decision(combine_options(known_votes, criterion), known_votes, criterion)
    failed = known.failed - len(slots)
    so_far = (f"{known.met:g} chose an option, abstained {known.abstained:g}, "
              f"failed {failed}")
    answers: list[str | None] = [o.label for o in criterion.options] + ["CANNOT_ASSESS", None]
    outcomes: set[tuple[str | None, bool]] = set()
    # Every answer of every pending member is tried, within the same budget as MET/UNMET.
    if len(answers) ** len(slots) <= len(_OUTCOMES) ** MAX_PENDING_TRIED:
        for trial_answers in itertools.product(answers, repeat=len(slots)):
            trial = list(plain)
            for slot, answer in zip(slots, trial_answers, strict=True):
                trial[slot] = answer
            decision = combine_options(trial, criterion)
            outcomes.add((decision.choice, decision.tie))
            if len(outcomes) > 1:
                break
    if len(outcomes) == 1:
        [(choice, tie)] = outcomes
        if choice is not None:
            option = None if choice == "CANNOT_ASSESS" else choice
            verdict = Verdict.CANNOT_ASSESS if option is None else Verdict.MET
            return PanelDecision(verdict, known.met, 0.0, known.abstained, failed, tie,
                                 f"{choice} whatever {who} answer(s) ({so_far})", option)
    return PanelDecision(None, known.met, 0.0, known.abstained, failed, False,
                         f"undecided: waiting for {who} to grade ({so_far} so far)")
