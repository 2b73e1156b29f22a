"""Agreement on a comparison's preferences, per criterion: the judge against the people's
effective preference (agreed or adjudicated, as in storage.services.pair_results), and the
people among themselves (each reviewer's current preference) — grading.pairwise.agreement.

A calibrated comparison's pairs that are examples (storage.services.pair_calibration) are
left out, as a calibrated run's example responses are left out of its agreement.

Blind review: an adjudicator or admin measures over everyone's preferences; a reviewer over
the pairs they answered whole (the only pairs where they may see others' preferences and the
judge's), exactly as if nobody had answered the others.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select

from grading.pairwise.agreement import (
    JudgeVsPeople,
    PeopleAgreement,
    judge_vs_people,
    people_agreement,
)
from storage import models as m
from storage.engine import SessionFactory
from storage.errors import NotFoundError
from storage.repositories import pair_reviews as repo
from storage.services import pair_calibration, pair_consensus
from storage.services.blindness import sight_of
from storage.services.pair_reviews import comparison_criteria, may_see_pair
from storage.services.reviewers import Actor, Role, require


@dataclass(frozen=True)
class CriterionPreferenceAgreement:
    position: int
    criterion_id: int | None
    criterion: str
    judge_vs_people: JudgeVsPeople
    people: PeopleAgreement


def preference_agreement(sessions: SessionFactory, *, actor: Actor, comparison_id: int,
                         resamples: int = 1000, seed: int = 0
                         ) -> list[CriterionPreferenceAgreement]:
    """Per criterion of the comparison (holistic: its one question), in order."""
    require(actor, Role.REVIEWER, "read agreement figures")
    sight = sight_of(actor)
    with sessions() as session:
        comparison = session.get(m.ComparisonRow, comparison_id)
        if comparison is None:
            raise NotFoundError(f"comparison {comparison_id} does not exist")
        criteria = comparison_criteria(session, comparison)
        ids = repo.judged_pair_ids(session, comparison_id)
        left_out = pair_calibration.left_out_keys(comparison.settings)
        if left_out:  # the pairs the judge was shown as examples: no test of it
            examples = set(session.scalars(select(m.ComparisonPairRow.id).where(
                m.ComparisonPairRow.comparison_id == comparison_id,
                m.ComparisonPairRow.match_key.in_(left_out))))
            ids = [pid for pid in ids if pid not in examples]
        judged = {(row.pair_id, row.position): row.preference for row in session.scalars(
            select(m.ComparisonPreferenceRow)
            .where(m.ComparisonPreferenceRow.pair_id.in_(ids)))}
        reviews, _adjudications = pair_consensus.current(session, ids)
        decisions = pair_consensus.decisions(session, ids)
    positions = [c.position for c in criteria]
    seen = [pid for pid in ids if may_see_pair(sight, reviews.get(pid, {}), positions)]
    found = []
    for c in criteria:
        judge = {pid: judged.get((pid, c.position)) for pid in seen}
        people = {pid: d.side for pid in seen
                  if (d := decisions.get(pid, {}).get(c.position)) is not None
                  and d.status != "disputed"}
        answers = {pid: {p.reviewer_key: p.side
                         for p in reviews.get(pid, {}).get(c.position, ())} for pid in seen}
        found.append(CriterionPreferenceAgreement(
            position=c.position, criterion_id=c.criterion_id, criterion=c.criterion.name,
            judge_vs_people=judge_vs_people(judge, people, criterion=c.criterion.name,
                                            resamples=resamples, seed=seed),
            people=people_agreement(answers, criterion=c.criterion.name,
                                    resamples=resamples, seed=seed)))
    return found


def reviewed_comparisons(sessions: SessionFactory) -> dict[int, tuple[int, int]]:
    """Comparison id -> (people's preferences saved on it, the newest one's id), for every
    comparison people reviewed: the count and id change with each save (a cache key)."""
    with sessions() as session:
        rows = session.execute(
            select(m.ComparisonPairRow.comparison_id, func.count(m.PairReviewRow.id),
                   func.max(m.PairReviewRow.id))
            .join(m.ComparisonPairRow, m.ComparisonPairRow.id == m.PairReviewRow.pair_id)
            .group_by(m.ComparisonPairRow.comparison_id)
            .order_by(m.ComparisonPairRow.comparison_id.desc())).all()
    return {cid: (count, newest) for cid, count, newest in rows}
