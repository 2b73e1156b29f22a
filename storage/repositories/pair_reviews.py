"""People's preferences on comparison pairs: append-only rows in streams (one per reviewer,
one for adjudications); the highest ``seq`` per (pair, position, stream) is current."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from storage import models as m
from storage.id_chunks import id_chunks


def latest(session: Session, pair_id: int, position: int,
           stream: str) -> m.PairReviewRow | None:
    return session.scalars(
        select(m.PairReviewRow)
        .where(m.PairReviewRow.pair_id == pair_id, m.PairReviewRow.position == position,
               m.PairReviewRow.stream == stream)
        .order_by(m.PairReviewRow.seq.desc()).limit(1)).one_or_none()


def append(session: Session, *, pair_id: int, position: int, criterion_id: int | None,
           stream: str, side: str, swapped: bool, reviewer_key: str, reviewer: str,
           note: str, previous: m.PairReviewRow | None) -> m.PairReviewRow:
    row = m.PairReviewRow(
        pair_id=pair_id, position=position, criterion_id=criterion_id, stream=stream,
        seq=(previous.seq + 1) if previous else 1, side=side, swapped=swapped,
        reviewer_key=reviewer_key, reviewer=reviewer, note=note,
        replaces_id=previous.id if previous else None)
    session.add(row)
    session.flush()  # the unique (pair, position, stream, seq) key is checked here
    return row


def current_rows(session: Session, pair_ids: Iterable[int]) -> list[m.PairReviewRow]:
    """The current preference of every stream on every criterion of these pairs."""
    ids = list(pair_ids)
    pr = m.PairReviewRow
    found: list[m.PairReviewRow] = []
    for chunk in id_chunks(ids):
        newest = (select(pr.pair_id, pr.position, pr.stream, func.max(pr.seq).label("seq"))
                  .where(pr.pair_id.in_(chunk))
                  .group_by(pr.pair_id, pr.position, pr.stream).subquery())
        found.extend(session.scalars(
            select(pr).join(newest, and_(newest.c.pair_id == pr.pair_id,
                                         newest.c.position == pr.position,
                                         newest.c.stream == pr.stream,
                                         newest.c.seq == pr.seq))
            .order_by(pr.pair_id, pr.position, pr.id)))
    return found


def history(session: Session, pair_id: int) -> list[m.PairReviewRow]:
    """Every preference given on the pair, in saving order."""
    return list(session.scalars(select(m.PairReviewRow)
                                .where(m.PairReviewRow.pair_id == pair_id)
                                .order_by(m.PairReviewRow.id)))


def judged_pair_ids(session: Session, comparison_id: int) -> list[int]:
    return list(session.scalars(
        select(m.ComparisonPairRow.id)
        .where(m.ComparisonPairRow.comparison_id == comparison_id,
               m.ComparisonPairRow.kind == "pair")
        .order_by(m.ComparisonPairRow.position)))
