"""Comparison runs, their pairs and preferences: queries only; the services commit."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session

from storage import models as m
from storage.errors import NotFoundError
from storage.repositories.results import metadata_value


def get(session: Session, comparison_id: int, *, for_update: bool = False) -> m.ComparisonRow:
    query = select(m.ComparisonRow).where(m.ComparisonRow.id == comparison_id)
    if for_update:
        query = query.with_for_update()
    row = session.scalars(query).one_or_none()
    if row is None:
        raise NotFoundError(f"comparison {comparison_id} does not exist")
    return row


def list_all(session: Session) -> list[m.ComparisonRow]:
    return list(session.scalars(select(m.ComparisonRow).order_by(m.ComparisonRow.id.desc())))


def source_responses(session: Session, dataset_id: int, column: str | None,
                     value: str | None) -> list[m.ResponseRow]:
    """A source's responses in id order: a dataset, or its rows whose ``column`` is ``value``."""
    query = select(m.ResponseRow).where(m.ResponseRow.dataset_id == dataset_id)
    if column is not None:
        query = query.where(metadata_value(column) == value)
    return list(session.scalars(query.order_by(m.ResponseRow.id)))


def pending_pairs(session: Session, comparison_id: int
                  ) -> list[tuple[int, str | None, m.ResponseRow, m.ResponseRow]]:
    """(pair id, query, response A, response B) of the pairs still to judge, in order."""
    pairs = session.execute(
        select(m.ComparisonPairRow.id, m.ComparisonPairRow.response_a_id,
               m.ComparisonPairRow.response_b_id)
        .where(m.ComparisonPairRow.comparison_id == comparison_id,
               m.ComparisonPairRow.kind == "pair", m.ComparisonPairRow.state == "pending")
        .order_by(m.ComparisonPairRow.position)).all()
    ids = {i for _, x, y in pairs for i in (x, y)}
    responses = {r.id: r for r in session.scalars(
        select(m.ResponseRow).where(m.ResponseRow.id.in_(ids)))} if ids else {}
    found = []
    for pair_id, a_id, b_id in pairs:
        first, second = responses[a_id], responses[b_id]
        found.append((pair_id, first.query if first.query is not None else second.query,
                      first, second))
    return found


def reset_failed(session: Session, comparison_id: int) -> int:
    """Failed pairs back to pending, their partial preferences removed; returns how many."""
    failed = select(m.ComparisonPairRow.id).where(
        m.ComparisonPairRow.comparison_id == comparison_id,
        m.ComparisonPairRow.state == "failed")
    session.execute(delete(m.ComparisonPreferenceRow)
                    .where(m.ComparisonPreferenceRow.pair_id.in_(failed)))
    return session.execute(
        update(m.ComparisonPairRow)
        .where(m.ComparisonPairRow.comparison_id == comparison_id,
               m.ComparisonPairRow.state == "failed")
        .values(state="pending", error=None, score=None, winner=None, calls=0, cost=None,
                inconsistent_count=0, judged_at=None)).rowcount or 0


def count_states(session: Session, comparison_id: int) -> dict[str, int]:
    return dict(session.execute(
        select(m.ComparisonPairRow.state, func.count())
        .where(m.ComparisonPairRow.comparison_id == comparison_id,
               m.ComparisonPairRow.kind == "pair")
        .group_by(m.ComparisonPairRow.state)).all())


def judged_pairs(session: Session, comparison_id: int) -> list[m.ComparisonPairRow]:
    """The judged pairs with their preferences, in order."""
    from sqlalchemy.orm import selectinload

    return list(session.scalars(
        select(m.ComparisonPairRow)
        .where(m.ComparisonPairRow.comparison_id == comparison_id,
               m.ComparisonPairRow.state == "done")
        .order_by(m.ComparisonPairRow.position)
        .options(selectinload(m.ComparisonPairRow.preferences))))


def not_judged(session: Session, comparison_id: int) -> list[m.ComparisonPairRow]:
    """Rows listed but not judged: no partner, identical texts, and failed pairs."""
    return list(session.scalars(
        select(m.ComparisonPairRow)
        .where(m.ComparisonPairRow.comparison_id == comparison_id,
               (m.ComparisonPairRow.kind != "pair") | (m.ComparisonPairRow.state == "failed"))
        .order_by(m.ComparisonPairRow.position)))


def external_ids(session: Session, response_ids: Sequence[int]) -> dict[int, str | None]:
    if not response_ids:
        return {}
    return dict(session.execute(
        select(m.ResponseRow.id, m.ResponseRow.external_id)
        .where(m.ResponseRow.id.in_(list(response_ids)))).all())


def touch(session: Session, comparison_id: int, worker: str, now: datetime) -> None:
    session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == comparison_id)
                    .values(heartbeat_at=now, claimed_by=worker))


def kind_counts(session: Session, comparison_id: int) -> dict[str, int]:
    return dict(session.execute(
        select(m.ComparisonPairRow.kind, func.count())
        .where(m.ComparisonPairRow.comparison_id == comparison_id)
        .group_by(m.ComparisonPairRow.kind)).all())


def insert_pairs(session: Session, rows: Sequence[dict]) -> None:
    if rows:
        session.execute(insert(m.ComparisonPairRow), list(rows))


def insert_preferences(session: Session, rows: Sequence[dict]) -> None:
    if rows:
        session.execute(insert(m.ComparisonPreferenceRow), list(rows))


def set_pair(session: Session, pair_id: int, values: dict) -> None:
    session.execute(update(m.ComparisonPairRow).where(m.ComparisonPairRow.id == pair_id)
                    .values(**values))


def _using(dataset_id: int | None, version_ids: Sequence[int]):
    condition = None
    if dataset_id is not None:
        condition = ((m.ComparisonRow.a_dataset_id == dataset_id)
                     | (m.ComparisonRow.b_dataset_id == dataset_id))
    if version_ids:
        by_version = m.ComparisonRow.rubric_version_id.in_(list(version_ids))
        condition = by_version if condition is None else condition | by_version
    return condition


def count_using(session: Session, *, dataset_id: int | None = None,
                version_ids: Sequence[int] = ()) -> tuple[int, int, int]:
    """(comparisons, people's pair reviews, panels of pairwise judges) that deleting the
    dataset or versions would remove (``delete_using``)."""
    condition = _using(dataset_id, version_ids)
    if condition is None:
        return 0, 0, 0
    ids = select(m.ComparisonRow.id).where(condition)
    pairs = select(m.ComparisonPairRow.id).where(m.ComparisonPairRow.comparison_id.in_(ids))
    comparisons = session.scalar(select(func.count()).select_from(m.ComparisonRow)
                                 .where(condition)) or 0
    reviews = session.scalar(select(func.count()).select_from(m.PairReviewRow)
                             .where(m.PairReviewRow.pair_id.in_(pairs))) or 0
    panels = session.scalar(
        select(func.count(func.distinct(m.PairPanelMemberRow.panel_id)))
        .where(m.PairPanelMemberRow.comparison_id.in_(ids))) or 0
    return comparisons, reviews, panels


def delete_using(session: Session, *, dataset_id: int | None = None,
                 version_ids: Sequence[int] = ()) -> int:
    """Delete the comparisons of a dataset (either side) or of rubric versions, with their
    pairs and preferences (judge output, as a run's grades) and people's reviews of them
    (the caller has checked it may: they count as human verdicts); returns how many."""
    condition = _using(dataset_id, version_ids)
    if condition is None:
        return 0
    ids = select(m.ComparisonRow.id).where(condition)
    pairs = select(m.ComparisonPairRow.id).where(m.ComparisonPairRow.comparison_id.in_(ids))
    # A panel of pairwise judges goes with any of its member comparisons (its members go
    # with it): it is computed from them, and a panel short of a member is another panel.
    session.execute(delete(m.PairPanelRow).where(m.PairPanelRow.id.in_(
        select(m.PairPanelMemberRow.panel_id)
        .where(m.PairPanelMemberRow.comparison_id.in_(ids)))))
    session.execute(update(m.PairReviewRow).where(m.PairReviewRow.pair_id.in_(pairs))
                    .values(replaces_id=None))  # the history's own links go with it
    session.execute(delete(m.PairReviewRow).where(m.PairReviewRow.pair_id.in_(pairs)))
    session.execute(delete(m.ComparisonPreferenceRow)
                    .where(m.ComparisonPreferenceRow.pair_id.in_(pairs)))
    session.execute(delete(m.ComparisonPairRow)
                    .where(m.ComparisonPairRow.comparison_id.in_(ids)))
    return session.execute(delete(m.ComparisonRow).where(condition)).rowcount or 0
