"""A panel of pairwise judges read like one judge: per pair, each member's stored preferences
combined criterion by criterion by ``grading.pairwise.panel.combine_reports`` (majority over
A / B / TIE; the pair's result through the one aggregation function), then summarised by
``grading.pairwise.summary`` exactly as one comparison's pairs are.

Pairs are the same two responses (A's and B's) in every member. A member that did not judge
a pair (it failed there, or was cancelled before it) has no vote on it, as a judge whose
call failed; a pair no member judged is listed as not compared, with each member's reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from grading.pairwise.grader import pair_report
from grading.pairwise.panel import combine_reports
from grading.pairwise.report import CriterionPreference, PairReport
from grading.pairwise.summary import ComparisonSummary, summarize
from storage import models as m
from storage.engine import SessionFactory
from storage.repositories import comparisons as comparison_repo
from storage.services import pair_calibration
from storage.services.comparisons import NotJudged
from storage.services.pair_panels import PairPanelInfo, load_panel, panel_info
from storage.services.pair_reviews import PairCriterion, comparison_criteria

Key = tuple[int, int]  # (response A id, response B id)


@dataclass(frozen=True)
class PanelPair:
    """One pair under the panel: its members' pair ids (None: not in that member), their
    reports (a member that did not judge it has no preference, with why) and the panel's."""

    key: Key
    match_key: str
    member_pair_ids: tuple[int | None, ...]
    members: tuple[PairReport, ...]
    report: PairReport
    judged: bool  # some member judged it: the panel has a result to count


@dataclass(frozen=True)
class PairPanelResults:
    panel: PairPanelInfo
    summary: ComparisonSummary | None  # None until some member judged a pair
    judged_pairs: int
    not_judged: list[NotJudged]  # pairs no member judged, with each member's reason


def _member_report(pair: m.ComparisonPairRow | None, comparison_id: int,
                   criteria: Sequence[PairCriterion], holistic: bool) -> PairReport:
    if pair is None or pair.state != "done":
        why = ("has no such pair" if pair is None else
               f"did not judge it ({pair.error})" if pair.error else
               f"did not judge it ({pair.state})")
        return pair_report([CriterionPreference(criterion=c.criterion,
                                                error=f"comparison #{comparison_id} {why}")
                            for c in criteria], holistic)
    stored = {p.position: p for p in pair.preferences}
    preferences = []
    for c in criteria:
        p = stored.get(c.position)
        preferences.append(CriterionPreference(
            criterion=c.criterion, error="no preference stored") if p is None else
            CriterionPreference(criterion=c.criterion, first=p.first, second=p.second,
                                first_reason=p.first_reason, second_reason=p.second_reason,
                                preference=p.preference, consistent=p.consistent,
                                error=p.error))
    return pair_report(preferences, holistic, cost=pair.cost)


def panel_pairs(session: Session, panel: m.PairPanelRow) -> list[PanelPair]:
    """Every pair of the panel's members, in the first member's order."""
    member_ids = [member.comparison_id for member in panel.members]
    first = comparison_repo.get(session, member_ids[0])
    # A pair a calibrated member was shown as an example is left out of the panel's figures,
    # as it is out of that member's own.
    left_out = frozenset().union(*(
        pair_calibration.left_out_keys(comparison_repo.get(session, cid).settings)
        for cid in member_ids))
    criteria = comparison_criteria(session, first)
    by_member: list[dict[Key, m.ComparisonPairRow]] = []
    for cid in member_ids:
        rows = session.scalars(
            select(m.ComparisonPairRow)
            .where(m.ComparisonPairRow.comparison_id == cid, m.ComparisonPairRow.kind == "pair")
            .order_by(m.ComparisonPairRow.position)
            .options(selectinload(m.ComparisonPairRow.preferences)))
        by_member.append({(r.response_a_id, r.response_b_id): r for r in rows})
    keys = list(dict.fromkeys(key for pairs in by_member for key in pairs))
    found = []
    for key in keys:
        rows = [pairs.get(key) for pairs in by_member]
        if next(r.match_key for r in rows if r is not None) in left_out:
            continue
        members = tuple(_member_report(row, cid, criteria, first.holistic)
                        for row, cid in zip(rows, member_ids, strict=True))
        found.append(PanelPair(
            key=key, match_key=next(r.match_key for r in rows if r is not None),
            member_pair_ids=tuple(None if r is None else r.id for r in rows),
            members=members, report=combine_reports(members),
            judged=any(r is not None and r.state == "done" for r in rows)))
    return found


def pair_panel_results(sessions: SessionFactory, panel_id: int, *, resamples: int = 1000,
                       seed: int = 0) -> PairPanelResults:
    """The panel's summary over the pairs some member judged — B's wins / ties / losses per
    criterion and overall with intervals, and the panel's position-consistency rate — and
    the pairs none judged."""
    with sessions() as session:
        row = load_panel(session, panel_id)
        info = panel_info(session, row)
        pairs = panel_pairs(session, row)
        ids = comparison_repo.external_ids(session, list({i for p in pairs for i in p.key}))
    judged = [p.report for p in pairs if p.judged]
    not_judged = [NotJudged(
        kind="failed", key=p.match_key, a_id=ids.get(p.key[0]) or f"#{p.key[0]}",
        b_id=ids.get(p.key[1]) or f"#{p.key[1]}",
        reason="; ".join(dict.fromkeys(r.preferences[0].error or "" for r in p.members)))
        for p in pairs if not p.judged]
    return PairPanelResults(
        panel=info, summary=summarize(judged, resamples=resamples, seed=seed) if judged else None,
        judged_pairs=len(judged), not_judged=not_judged)
