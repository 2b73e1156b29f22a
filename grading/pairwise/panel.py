"""A panel of pairwise judges: several judges' comparisons of the same pair combined criterion
by criterion, then scored through the same aggregation as one judge's preferences.

The rule, per criterion (documented in docs/guide/pairwise.md):

- each judge's preference is one vote: A, B or TIE; CANNOT_ASSESS abstains; a judge whose
  calls failed on the criterion has no vote;
- a side (or TIE) that more than half of the voting judges chose is the panel's preference;
  otherwise the panel is split and its preference is TIE (a split panel has not shown that
  either response is better);
- no vote, but some judge abstained: CANNOT_ASSESS; every judge failed: no preference (the
  criterion failed, with the judges' errors);
- the panel's preference is position-consistent when every judge that voted was (each judge
  asked both orders); an inconsistent judge's vote is already a TIE.

The pair's result then comes from ``grading.pairwise.aggregation`` exactly as for one judge,
so a panel's score means what a judge's score means.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from grading.pairwise.grader import pair_report
from grading.pairwise.parsing import Side
from grading.pairwise.report import CriterionPreference, PairReport

_VOTES = ("A", "B", "TIE")


@dataclass(frozen=True)
class SideVotes:
    """How a panel voted on one criterion."""

    a: int = 0
    b: int = 0
    tie: int = 0
    abstained: int = 0
    failed: int = 0

    def describe(self) -> str:
        words = f"A {self.a}, B {self.b}, TIE {self.tie}"
        if self.abstained:
            words += f", cannot assess {self.abstained}"
        if self.failed:
            words += f", failed {self.failed}"
        return words


def combine_sides(sides: Sequence[Side | None]) -> tuple[Side | None, SideVotes]:
    """The panel's preference on one criterion from its judges' (None: that judge failed)."""
    if len(sides) < 2:
        raise ValueError(f"a panel needs at least two judges, got {len(sides)}")
    counts = Counter(sides)
    votes = SideVotes(a=counts["A"], b=counts["B"], tie=counts["TIE"],
                      abstained=counts["CANNOT_ASSESS"], failed=counts[None])
    voting = votes.a + votes.b + votes.tie
    if voting == 0:
        return ("CANNOT_ASSESS" if votes.abstained else None), votes
    for side in _VOTES:
        if 2 * counts[side] > voting:
            return side, votes  # type: ignore[return-value]
    return "TIE", votes


def _criterion(index: int, reports: Sequence[PairReport]) -> CriterionPreference:
    members = [report.preferences[index] for report in reports]
    preference, votes = combine_sides([m.preference for m in members])
    voted = [m for m in members if m.preference in _VOTES]
    consistent = all(m.consistent for m in voted) if voted else None
    reason = f"panel of {len(members)}: {votes.describe()}"
    error = None
    if preference is None:
        error = "every judge failed: " + "; ".join(
            f"judge {number}: {m.error}" for number, m in enumerate(members, start=1))
    return CriterionPreference(criterion=members[0].criterion, preference=preference,
                               consistent=None if preference is None else consistent,
                               first_reason=reason, error=error)


def combine_reports(reports: Sequence[PairReport]) -> PairReport:
    """The panel's comparison of one pair from each judge's ``PairReport`` of it (the same
    rubric, asked the same way: per criterion or holistic)."""
    if len(reports) < 2:
        raise ValueError(f"a panel needs at least two judges, got {len(reports)}")
    shapes = {(r.holistic, tuple(p.criterion for p in r.preferences)) for r in reports}
    if len(shapes) != 1:
        raise ValueError("the judges of a panel must compare the pair on the same criteria, "
                         "asked the same way (all per criterion or all holistic)")
    first = reports[0]
    preferences = [_criterion(i, reports) for i in range(len(first.preferences))]
    usages = [r.token_usage for r in reports if r.token_usage is not None]
    usage = None
    for one in usages:
        usage = one if usage is None else usage + one
    costs = [r.completion_cost for r in reports]
    cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
    return pair_report(preferences, first.holistic, calls=sum(r.calls for r in reports),
                       usage=usage, cost=cost)
