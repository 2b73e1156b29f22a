"""Rubrics, their versions and criteria."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, selectinload

from grading.types import Criterion
from storage import models as m
from storage.errors import NotFoundError
from storage.repositories.locks import take_sqlite_write_lock


def get_rubric(session: Session, rubric_id: int) -> m.RubricRow:
    row = session.get(m.RubricRow, rubric_id)
    if row is None:
        raise NotFoundError(f"rubric {rubric_id} does not exist")
    return row


def find_rubric_by_name(session: Session, name: str) -> m.RubricRow | None:
    return session.scalars(select(m.RubricRow).where(m.RubricRow.name == name)).one_or_none()


def get_version(
    session: Session, version_id: int, *, for_update: bool = False
) -> m.RubricVersionRow:
    query = (
        select(m.RubricVersionRow)
        .where(m.RubricVersionRow.id == version_id)
        .options(selectinload(m.RubricVersionRow.criteria),
                 selectinload(m.RubricVersionRow.rubric))
    )
    if for_update:
        query = query.with_for_update()
        take_sqlite_write_lock(session, m.RubricVersionRow, version_id)
    row = session.scalars(query).one_or_none()
    if row is None:
        raise NotFoundError(f"rubric version {version_id} does not exist")
    return row


def latest_version(session: Session, rubric_id: int) -> m.RubricVersionRow:
    version_id = session.scalar(
        select(func.max(m.RubricVersionRow.id)).where(m.RubricVersionRow.rubric_id == rubric_id)
    )
    if version_id is None:
        raise NotFoundError(f"rubric {rubric_id} has no versions")
    return get_version(session, version_id)


def list_versions(session: Session, rubric_id: int) -> list[m.RubricVersionRow]:
    return list(session.scalars(
        select(m.RubricVersionRow)
        .where(m.RubricVersionRow.rubric_id == rubric_id)
        .order_by(m.RubricVersionRow.number)
        .options(selectinload(m.RubricVersionRow.criteria),
                 selectinload(m.RubricVersionRow.rubric))
    ))


def list_rubrics(session: Session, *, include_archived: bool) -> list[tuple[m.RubricRow, int, int]]:
    """Rubrics with their version count and latest version id, by name."""
    counts = (
        select(
            m.RubricVersionRow.rubric_id,
            func.count().label("n"),
            func.max(m.RubricVersionRow.id).label("latest"),
        )
        .group_by(m.RubricVersionRow.rubric_id)
        .subquery()
    )
    query = (
        select(m.RubricRow, counts.c.n, counts.c.latest)
        .join(counts, counts.c.rubric_id == m.RubricRow.id)
        .order_by(m.RubricRow.name)
    )
    if not include_archived:
        query = query.where(m.RubricRow.archived.is_(False))
    return [(row, n, latest) for row, n, latest in session.execute(query)]


def add_rubric(session: Session, name: str, description: str) -> m.RubricRow:
    row = m.RubricRow(name=name, description=description)
    session.add(row)
    session.flush()
    return row


def add_version(
    session: Session, rubric: m.RubricRow, criteria: Sequence[Criterion], note: str,
    created_by: str | None = None,
) -> m.RubricVersionRow:
    number = (session.scalar(
        select(func.max(m.RubricVersionRow.number))
        .where(m.RubricVersionRow.rubric_id == rubric.id)
    ) or 0) + 1
    version = m.RubricVersionRow(rubric=rubric, number=number, note=note, created_by=created_by)
    version.criteria = _criterion_rows(criteria)
    session.add(version)
    session.flush()
    return version


def replace_criteria(
    session: Session, version: m.RubricVersionRow, criteria: Sequence[Criterion]
) -> None:
    """Swap the criteria of an unfrozen version (nothing refers to them yet)."""
    version.criteria.clear()
    session.flush()
    version.criteria.extend(_criterion_rows(criteria))
    session.flush()


def _criterion_rows(criteria: Sequence[Criterion]) -> list[m.CriterionRow]:
    return [
        m.CriterionRow(
            position=index, name=c.name, requirement=c.requirement, weight=c.weight,
            section=c.section, required=c.required,
            options=None if c.options is None else [o.model_dump() for o in c.options],
            scale_type=None if c.options is None else c.scale_type,
        )
        for index, c in enumerate(criteria)
    ]


def freeze(session: Session, version_id: int) -> None:
    """Mark a version frozen (first grade or review); the first time stays recorded."""
    session.execute(
        update(m.RubricVersionRow)
        .where(m.RubricVersionRow.id == version_id, m.RubricVersionRow.frozen_at.is_(None))
        .values(frozen_at=m.utcnow())
    )


def criteria_of(session: Session, version_id: int) -> list[m.CriterionRow]:
    """A version's criteria in order, in one query (the hot path of effective scores)."""
    return list(session.scalars(
        select(m.CriterionRow).where(m.CriterionRow.version_id == version_id)
        .order_by(m.CriterionRow.position)
    ))


def criterion_with_frozen(
    session: Session, criterion_id: int
) -> tuple[m.CriterionRow, bool] | None:
    """A criterion and whether its version is frozen, in one query."""
    row = session.execute(
        select(m.CriterionRow, m.RubricVersionRow.frozen_at.is_not(None))
        .join(m.RubricVersionRow, m.RubricVersionRow.id == m.CriterionRow.version_id)
        .where(m.CriterionRow.id == criterion_id)
    ).one_or_none()
    return None if row is None else (row[0], bool(row[1]))


def criteria_with_frozen(
    session: Session, criterion_ids: Sequence[int]
) -> dict[int, tuple[m.CriterionRow, bool]]:
    """``criterion_with_frozen`` of several criteria in one query (missing ids left out)."""
    return {row[0].id: (row[0], bool(row[1])) for row in session.execute(
        select(m.CriterionRow, m.RubricVersionRow.frozen_at.is_not(None))
        .join(m.RubricVersionRow, m.RubricVersionRow.id == m.CriterionRow.version_id)
        .where(m.CriterionRow.id.in_(list(criterion_ids))))}
