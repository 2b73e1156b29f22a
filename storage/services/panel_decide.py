"""A panel's grade of one response from its members' choices: the one place that decides it.

``storage.services.panels`` reads a panel through it while a member is still grading, and
``storage.services.panel_upkeep`` stores what it decides when the members' grades land, so
the stored decisions and a recomputation cannot drift apart. The voting rule is
``grading.panels``; the score is ``grading.aggregation.score_verdicts`` with the panel's own
scoring settings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grading.aggregation import score_verdicts
from grading.panels import PanelDecision, combine_options_with_pending, combine_with_pending
from grading.types import ScoringSettings
from storage.dto import Choice, CriterionInfo, GradeInfo


@dataclass(frozen=True)
class PanelCriterion:
    criterion_id: int
    label: str
    decision: PanelDecision  # on a multi-choice criterion the label is in decision.option
    # Each member's choice: its verdict, or its option label on a multi-choice criterion.
    member_verdicts: tuple[Choice | None, ...]


@dataclass(frozen=True)
class PanelGrade:
    """The panel's grade of one response; ``score`` None with ``error`` when it has none."""

    panel_id: int
    response_id: int
    score: float | None
    raw_score: float | None
    error: str | None
    criteria: tuple[PanelCriterion, ...]
    cost: float | None  # the members' costs added up; None when any is unknown
    members_graded: int
    # Member runs still grading that have not graded this response yet: until they have,
    # the record is incomplete (criteria they could still swing are undecided, no score).
    pending_members: tuple[int, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.pending_members


@dataclass(frozen=True)
class MemberVotes:
    """One member's grade of one response, as much of it as a panel reads."""

    choices: Mapping[int, Choice | None]  # criterion id -> the member's choice
    cost: float | None

    @classmethod
    def of(cls, grade: GradeInfo) -> MemberVotes:
        return cls({c.criterion_id: c.choice for c in grade.criteria}, grade.cost)


def decide(
    panel_id: int, rules: tuple[str, str], weights: list[float] | None,
    scoring: ScoringSettings, criteria: Sequence[CriterionInfo],
    members: Sequence[MemberVotes | None], response_id: int,
    to_grade: Mapping[str, Any] | None, pending: Sequence[int | None],
    memo: dict | None = None,
) -> PanelGrade:
    """``members[i]``: member i's grade of the response (None: none yet); ``pending[i]``:
    member i's run id while it still has this response to grade; ``rules``: (the panel's
    rule, its tie rule); ``to_grade``: the response's texts, for a length penalty.

    ``memo``: a dict kept across the responses of one panel while nobody is pending: a
    criterion's decision depends only on the votes, and the score on the choices (and the
    texts, when there is a length penalty), so each is computed once per distinct pattern
    (filling a panel of 100,000 responses meets a few dozen)."""
    rule, tie_rule = rules
    member_maps = [member.choices if member else {} for member in members]
    waiting_flags = [run_id is not None for run_id in pending]
    waiting = [run_id for run_id in pending if run_id is not None]
    who = "run " if len(waiting) == 1 else "runs "
    who += ", ".join(f"#{run_id}" for run_id in waiting)
    rows = []
    if memo is not None and waiting:
        raise ValueError("decisions are remembered only while no member is pending")
    for criterion in criteria:
        votes = [verdicts.get(criterion.id) for verdicts in member_maps]
        key = (criterion.id, tuple(votes))
        if memo is not None and key in memo:
            decision = memo[key]
        elif criterion.is_multi_choice:
            # median / mode of the options, every member once (grading.panels says why)
            decision = combine_options_with_pending(votes, waiting_flags,
                                                    criterion.to_criterion(), waiting_for=who)
        else:
            decision = combine_with_pending(
                votes, waiting_flags, rule,  # type: ignore[arg-type]
                criterion_weight=criterion.weight, weights=weights, waiting_for=who,
                tie_rule=tie_rule)  # type: ignore[arg-type]
        if memo is not None:
            memo[key] = decision
        rows.append(PanelCriterion(criterion_id=criterion.id, label=criterion.label,
                                   decision=decision, member_verdicts=tuple(votes)))
    verdicts = [row.decision.choice for row in rows]
    score = raw = None
    error = None
    if waiting and any(v is None for v in verdicts):
        open_ = [row.label for row in rows if row.decision.verdict is None]
        error = (f"incomplete: waiting for {who} to grade this response (still grading); "
                 f"undecided until then: {', '.join(open_)}")
    elif any(v is None for v in verdicts):
        missing = [row.label for row in rows if row.decision.verdict is None]
        error = f"every member failed on {', '.join(missing)}: the panel has no verdict there"
    else:
        scored = ("score", tuple(verdicts))
        if memo is not None and to_grade is None and scored in memo:
            score, raw = memo[scored]
        else:
            aggregate, _penalty, score = score_verdicts(
                [c.to_criterion() for c in criteria], verdicts, scoring, to_grade)  # type: ignore[arg-type]
            raw = aggregate.raw_score
            if memo is not None and to_grade is None:
                memo[scored] = score, raw
        if score is None:
            error = "nothing left to score (every criterion CANNOT_ASSESS or weight 0)"
    costs = [member.cost if member else 0.0 for member in members]
    cost = None if any(c is None for c in costs) else sum(costs)  # type: ignore[misc]
    return PanelGrade(panel_id=panel_id, response_id=response_id, score=score, raw_score=raw,
                      error=error, criteria=tuple(rows), cost=cost,
                      members_graded=sum(1 for member in members if member is not None),
                      pending_members=tuple(waiting))
