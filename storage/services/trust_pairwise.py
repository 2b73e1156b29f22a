"""The trust report's pairwise order effect: per judge (model) that judged stored comparisons
of this rubric version with this dataset on either side, its answers in both orders
(comparison_preferences.first / .second) measured by grading.trust.pairwise_order."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from grading.trust.pairwise_order import PairwiseOrder, pairwise_order
from storage import models as m


@dataclass(frozen=True)
class PairwiseJudgeOrder:
    model: str
    comparisons: tuple[int, ...]  # comparison ids it judged (any state: what was answered)
    order: PairwiseOrder


def read_pairwise_orders(session: Session, rubric_version_id: int, dataset_id: int
                         ) -> tuple[PairwiseJudgeOrder, ...]:
    """Per model, in the order of its first comparison: the order effect over every
    pair-criterion it answered in both orders (pairs of the kind "pair" only)."""
    c, pair, pref = m.ComparisonRow, m.ComparisonPairRow, m.ComparisonPreferenceRow
    answers: dict[str, list[tuple[str | None, str | None]]] = defaultdict(list)
    seen: dict[str, list[int]] = defaultdict(list)
    for comparison_id, model in session.execute(
            select(c.id, c.model).where(
                c.rubric_version_id == rubric_version_id,
                or_(c.a_dataset_id == dataset_id, c.b_dataset_id == dataset_id))
            .order_by(c.id)):
        seen[model].append(comparison_id)
    if not seen:
        return ()
    ids = [cid for found in seen.values() for cid in found]
    for model, first, second in session.execute(
            select(c.model, pref.first, pref.second)
            .join(pair, pair.comparison_id == c.id)
            .join(pref, pref.pair_id == pair.id)
            .where(c.id.in_(ids), pair.kind == "pair")
            .order_by(pref.id)):
        answers[model].append((first, second))
    return tuple(PairwiseJudgeOrder(model=model, comparisons=tuple(found),
                                    order=pairwise_order(answers.get(model, [])))
                 for model, found in seen.items())
