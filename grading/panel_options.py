"""Panels on multi-choice criteria: the members' options -> one option, by a stated rule.

Ordinal criteria take the median option by value, nominal ones the most chosen option; a tie
goes to the worse option (``grading.panels``' docstring has the whole rule).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from grading.options import find_option, worst_option_among
from grading.panel_decision import _OUTCOMES, MAX_PENDING_TRIED, PanelDecision
from grading.types import Criterion, Verdict


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
