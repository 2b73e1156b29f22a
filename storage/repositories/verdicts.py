"""Human verdicts: append-only rows; the highest ``seq`` per (response, criterion) is current."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session, aliased

from storage import models as m


def latest(session: Session, response_id: int, criterion_id: int) -> m.HumanVerdictRow | None:
    return session.scalars(
        select(m.HumanVerdictRow)
        .where(m.HumanVerdictRow.response_id == response_id,
               m.HumanVerdictRow.criterion_id == criterion_id)
        .order_by(m.HumanVerdictRow.seq.desc())
        .limit(1)
    ).one_or_none()


def append(
    session: Session,
    *,
    response_id: int,
    rubric_version_id: int,
    criterion_id: int,
    verdict: str,
    reviewer: str,
    note: str,
    previous: m.HumanVerdictRow | None,
) -> m.HumanVerdictRow:
    row = m.HumanVerdictRow(
        response_id=response_id, rubric_version_id=rubric_version_id,
        criterion_id=criterion_id, seq=(previous.seq + 1) if previous else 1,
        verdict=verdict, reviewer=reviewer, note=note,
        replaces_id=previous.id if previous else None,
    )
    session.add(row)
    session.flush()  # the unique (response, criterion, seq) key is checked here
    return row


def current_for_responses(
    session: Session, response_ids: Sequence[int], rubric_version_id: int
) -> list[tuple[m.HumanVerdictRow, m.HumanVerdictRow | None]]:
    """The current verdict (and the one it replaced) of every reviewed criterion of these
    responses under a rubric version."""
    ids = list(response_ids)
    previous = aliased(m.HumanVerdictRow)
    found: list[tuple[m.HumanVerdictRow, m.HumanVerdictRow | None]] = []
    for start in range(0, len(ids), 500):
        newest = (
            select(
                m.HumanVerdictRow.response_id,
                m.HumanVerdictRow.criterion_id,
                func.max(m.HumanVerdictRow.seq).label("seq"),
            )
            .where(m.HumanVerdictRow.rubric_version_id == rubric_version_id,
                   m.HumanVerdictRow.response_id.in_(ids[start:start + 500]))
            .group_by(m.HumanVerdictRow.response_id, m.HumanVerdictRow.criterion_id)
            .subquery()
        )
        found.extend((row, prev) for row, prev in session.execute(
            select(m.HumanVerdictRow, previous)
            .join(newest, and_(
                newest.c.response_id == m.HumanVerdictRow.response_id,
                newest.c.criterion_id == m.HumanVerdictRow.criterion_id,
                newest.c.seq == m.HumanVerdictRow.seq,
            ))
            .outerjoin(previous, previous.id == m.HumanVerdictRow.replaces_id)
        ))
    return found


def history(
    session: Session, response_id: int, *, rubric_version_id: int | None = None,
    criterion_id: int | None = None,
) -> list[tuple[m.HumanVerdictRow, m.HumanVerdictRow | None]]:
    """Every verdict with the one it replaced, oldest first."""
    previous = aliased(m.HumanVerdictRow)
    query = (
        select(m.HumanVerdictRow, previous)
        .outerjoin(previous, previous.id == m.HumanVerdictRow.replaces_id)
        .where(m.HumanVerdictRow.response_id == response_id)
        .order_by(m.HumanVerdictRow.criterion_id, m.HumanVerdictRow.seq)
    )
    if rubric_version_id is not None:
        query = query.where(m.HumanVerdictRow.rubric_version_id == rubric_version_id)
    if criterion_id is not None:
        query = query.where(m.HumanVerdictRow.criterion_id == criterion_id)
    return [(row, prev) for row, prev in session.execute(query)]


def count_for_versions(session: Session, version_ids: Sequence[int]) -> int:
    if not version_ids:
        return 0
    return session.scalar(
        select(func.count()).select_from(m.HumanVerdictRow)
        .where(m.HumanVerdictRow.rubric_version_id.in_(list(version_ids)))
    ) or 0


def count_for_dataset(session: Session, dataset_id: int) -> int:
    return session.scalar(
        select(func.count()).select_from(m.HumanVerdictRow)
        .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
        .where(m.ResponseRow.dataset_id == dataset_id)
    ) or 0
