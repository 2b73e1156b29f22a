"""A pair's result with the people's preferences in place of the judge's, the comparison's
summary over those results, and the queue of disputed pair criteria for adjudicators.

Per criterion the people's decision (storage.services.pair_consensus) replaces the judge's
preference when it is agreed or adjudicated; a disputed criterion, or one nobody answered,
keeps the judge's. The pair's score and winner then come from
``grading.pairwise.aggregation.aggregate_preferences`` — the one aggregation function — so a
person's correction changes the result exactly as the judge's answer would have. The
position-consistency figures stay the judge's (people are asked once, in one order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from grading.pairwise import aggregation
from grading.pairwise.parsing import Side
from grading.pairwise.report import CriterionPreference, PairReport
from grading.pairwise.summary import ComparisonSummary, summarize
from storage import models as m
from storage.engine import SessionFactory
from storage.errors import NotFoundError
from storage.repositories import pair_reviews as repo
from storage.services import pair_calibration, pair_consensus
from storage.services.blindness import sight_of
from storage.services.pair_consensus import PairDecision, PairPreferenceInfo
from storage.services.pair_reviews import (
    PairCriterion,
    comparison_criteria,
    load_pair,
    may_see_pair,
)
from storage.services.reviewers import Actor, PermissionDeniedError, Role, require

Source = Literal["people", "judge"]


@dataclass(frozen=True)
class PairPeopleResult:
    """``report``: the pair with people's decisions in place of the judge's preferences;
    ``judge``: the judge's own; ``sources[position]``: whose preference ``report`` uses."""

    pair_id: int
    report: PairReport
    judge: PairReport
    sources: dict[int, Source]
    decisions: dict[int, PairDecision]


@dataclass(frozen=True)
class DisputedPreference:
    """A criterion of a pair whose reviewers disagree and that no adjudication decided."""

    pair_id: int
    match_key: str
    position: int
    criterion_id: int | None
    criterion: str
    reviews: tuple[PairPreferenceInfo, ...]
    judge: Side | None


JudgeRows = dict[int, dict[int, m.ComparisonPreferenceRow]]  # pair -> position -> row


def _judge_rows(session: Session, pair_ids: Sequence[int]) -> JudgeRows:
    found: JudgeRows = {}
    for row in session.scalars(select(m.ComparisonPreferenceRow)
                               .where(m.ComparisonPreferenceRow.pair_id.in_(list(pair_ids)))):
        found.setdefault(row.pair_id, {})[row.position] = row
    return found


def _report(criteria: Sequence[PairCriterion], judge: Mapping[int, m.ComparisonPreferenceRow],
            decided: Mapping[int, Side | None]) -> PairReport:
    preferences = []
    for c in criteria:
        row = judge.get(c.position)
        made = {} if row is None else {
            "first": row.first, "second": row.second, "first_reason": row.first_reason,
            "second_reason": row.second_reason, "preference": row.preference,
            "consistent": row.consistent, "error": row.error}
        side = decided.get(c.position)
        if side is not None:
            made.update(preference=side, error=None)
        preferences.append(CriterionPreference(criterion=c.criterion, **made))
    result = aggregation.aggregate_preferences(preferences)
    return PairReport(preferences=preferences, holistic=criteria[0].criterion_id is None,
                      score=result.score, winner=aggregation.winner(result.score),
                      margin=None if result.score is None else 2 * result.score - 1,
                      scored_count=result.scored_count,
                      inconsistent_count=sum(p.consistent is False for p in preferences))


def people_report(criteria: Sequence[PairCriterion], decided: Mapping[int, Side | None]
                  ) -> PairReport:
    """The pair's result from people's preferences alone (no judge row behind them)."""
    return _report(criteria, {}, decided)


def _applied(decisions: Mapping[int, PairDecision]) -> dict[int, Side | None]:
    return {n: d.side for n, d in decisions.items() if d.status != "disputed"}


def pair_result(sessions: SessionFactory, *, actor: Actor, pair_id: int) -> PairPeopleResult:
    """The pair's result with the people's preferences (blind: a reviewer must have answered
    the whole pair first)."""
    require(actor, Role.REVIEWER, "read a pair's result")
    with sessions() as session:
        _pair, comparison = load_pair(session, pair_id)
        criteria = comparison_criteria(session, comparison)
        reviews, _adj = pair_consensus.current(session, [pair_id])
        if not may_see_pair(sight_of(actor), reviews.get(pair_id, {}),
                            [c.position for c in criteria]):
            raise PermissionDeniedError(
                "answer every criterion of this pair first: until then its result, the "
                "judge's preferences and other people's are hidden from you")
        judge = _judge_rows(session, [pair_id]).get(pair_id, {})
        decisions = pair_consensus.decisions(session, [pair_id]).get(pair_id, {})
    applied = _applied(decisions)
    return PairPeopleResult(
        pair_id=pair_id, report=_report(criteria, judge, applied),
        judge=_report(criteria, judge, {}), decisions=decisions,
        sources={c.position: "people" if applied.get(c.position) is not None else "judge"
                 for c in criteria})


def people_results(sessions: SessionFactory, *, actor: Actor, comparison_id: int,
                   resamples: int = 1000, seed: int = 0) -> ComparisonSummary | None:
    """The comparison's summary (wins / ties / losses of B, win rate with intervals) with
    the people's preferences in place of the judge's, over the pairs the judge judged or
    people decided. A blind reviewer's summary uses the people's decisions only on the
    pairs they answered whole; None when there is nothing to summarise."""
    require(actor, Role.REVIEWER, "read a comparison's results")
    sight = sight_of(actor)
    with sessions() as session:
        comparison = session.get(m.ComparisonRow, comparison_id)
        if comparison is None:
            raise NotFoundError(f"comparison {comparison_id} does not exist")
        criteria = comparison_criteria(session, comparison)
        positions = [c.position for c in criteria]
        left_out = pair_calibration.left_out_keys(comparison.settings)
        pairs = [(pid, state) for pid, state, key in session.execute(
            select(m.ComparisonPairRow.id, m.ComparisonPairRow.state,
                   m.ComparisonPairRow.match_key)
            .where(m.ComparisonPairRow.comparison_id == comparison_id,
                   m.ComparisonPairRow.kind == "pair")
            .order_by(m.ComparisonPairRow.position)) if key not in left_out]
        ids = [pid for pid, _state in pairs]
        judge = _judge_rows(session, ids)
        reviews, _adj = pair_consensus.current(session, ids)
        decisions = pair_consensus.decisions(session, ids)
    reports = []
    for pid, state in pairs:
        seen = may_see_pair(sight, reviews.get(pid, {}), positions)
        applied = _applied(decisions.get(pid, {})) if seen else {}
        if state == "done" or any(side is not None for side in applied.values()):
            reports.append(_report(criteria, judge.get(pid, {}), applied))
    return summarize(reports, resamples=resamples, seed=seed) if reports else None


def pair_adjudication_queue(sessions: SessionFactory, *, actor: Actor,
                            comparison_id: int) -> list[DisputedPreference]:
    """Every disputed (pair, criterion) of the comparison, in pair order."""
    require(actor, Role.ADJUDICATOR, "see the pairs waiting for adjudication")
    with sessions() as session:
        comparison = session.get(m.ComparisonRow, comparison_id)
        if comparison is None:
            raise NotFoundError(f"comparison {comparison_id} does not exist")
        criteria = {c.position: c for c in comparison_criteria(session, comparison)}
        ids = repo.judged_pair_ids(session, comparison_id)
        keys = dict(session.execute(select(m.ComparisonPairRow.id, m.ComparisonPairRow.match_key)
                                    .where(m.ComparisonPairRow.id.in_(ids))).all())
        decisions = pair_consensus.decisions(session, ids)
        judge = _judge_rows(session, ids)
    queue = []
    for pid in ids:
        for position, d in sorted(decisions.get(pid, {}).items()):
            if d.status != "disputed":
                continue
            c = criteria[position]
            row = judge.get(pid, {}).get(position)
            queue.append(DisputedPreference(
                pair_id=pid, match_key=keys[pid], position=position,
                criterion_id=c.criterion_id, criterion=c.criterion.name, reviews=d.reviews,
                judge=None if row is None else row.preference))
    return queue
