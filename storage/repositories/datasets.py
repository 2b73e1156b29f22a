"""Datasets and their responses."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from storage import models as m
from storage.errors import NotFoundError
from storage.id_chunks import id_chunks


def get_dataset(session: Session, dataset_id: int) -> m.DatasetRow:
    row = session.get(m.DatasetRow, dataset_id)
    if row is None:
        raise NotFoundError(f"dataset {dataset_id} does not exist")
    return row


def find_dataset_by_name(session: Session, name: str) -> m.DatasetRow | None:
    return session.scalars(select(m.DatasetRow).where(m.DatasetRow.name == name)).one_or_none()


def response_count(session: Session, dataset_id: int) -> int:
    return session.scalar(
        select(func.count()).select_from(m.ResponseRow)
        .where(m.ResponseRow.dataset_id == dataset_id)
    ) or 0


def list_datasets(session: Session, *, include_archived: bool) -> list[tuple[m.DatasetRow, int]]:
    counts = (
        select(m.ResponseRow.dataset_id, func.count().label("n"))
        .group_by(m.ResponseRow.dataset_id)
        .subquery()
    )
    query = (
        select(m.DatasetRow, func.coalesce(counts.c.n, 0))
        .outerjoin(counts, counts.c.dataset_id == m.DatasetRow.id)
        .order_by(m.DatasetRow.name)
    )
    if not include_archived:
        query = query.where(m.DatasetRow.archived.is_(False))
    return [(row, n) for row, n in session.execute(query)]


def existing_external_ids(session: Session, dataset_id: int, ids: Iterable[str]) -> set[str]:
    wanted = list(set(ids))
    found: set[str] = set()
    for chunk in id_chunks(wanted):
        found.update(session.scalars(
            select(m.ResponseRow.external_id).where(
                m.ResponseRow.dataset_id == dataset_id, m.ResponseRow.external_id.in_(chunk)
            )
        ))
    return found


def add_responses(session: Session, dataset_id: int, rows: Sequence[dict]) -> list[int]:
    """Bulk insert; each dict has ResponseRow attributes. Returns the new ids in order."""
    if not rows:
        return []
    return list(session.scalars(
        insert(m.ResponseRow).returning(m.ResponseRow.id, sort_by_parameter_order=True),
        [{"dataset_id": dataset_id, **r} for r in rows],
    ))


def insert_responses(session: Session, dataset_id: int, rows: Sequence[dict]) -> None:
    """Bulk insert without reading ids back (a plain executemany: the fast path for files)."""
    if rows:
        session.execute(insert(m.ResponseRow), [{"dataset_id": dataset_id, **r} for r in rows])


def get_response(session: Session, response_id: int) -> m.ResponseRow:
    row = session.get(m.ResponseRow, response_id)
    if row is None:
        raise NotFoundError(f"response {response_id} does not exist")
    return row


def require_response(session: Session, response_id: int) -> None:
    """NotFoundError unless the response exists (without reading its possibly large text)."""
    if session.scalar(select(m.ResponseRow.id).where(m.ResponseRow.id == response_id)) is None:
        raise NotFoundError(f"response {response_id} does not exist")


def get_responses(session: Session, response_ids: Sequence[int]) -> list[m.ResponseRow]:
    found: dict[int, m.ResponseRow] = {}
    ids = list(response_ids)
    for chunk in id_chunks(ids):
        for row in session.scalars(
            select(m.ResponseRow).where(m.ResponseRow.id.in_(chunk))
        ):
            found[row.id] = row
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(f"responses do not exist: {', '.join(map(str, missing[:10]))}")
    return [found[i] for i in ids]


def list_responses(
    session: Session, dataset_id: int, *, offset: int, limit: int | None
) -> list[m.ResponseRow]:
    query = (
        select(m.ResponseRow)
        .where(m.ResponseRow.dataset_id == dataset_id)
        .order_by(m.ResponseRow.id)
        .offset(offset)
        .limit(limit)
    )
    return list(session.scalars(query))


def response_ids(session: Session, dataset_id: int) -> list[int]:
    return list(session.scalars(
        select(m.ResponseRow.id).where(m.ResponseRow.dataset_id == dataset_id)
        .order_by(m.ResponseRow.id)
    ))


def response_texts(session: Session, response_ids: Sequence[int]) -> dict[int, dict[str, str]]:
    """The texts of these responses as a grader takes them, read in batches of 500 ids.

    Passed as parts (thinking, output): an uploaded output is never re-parsed for <output>
    tags. Read only when a length penalty needs them: texts can be large."""
    ids = list(response_ids)
    found: dict[int, dict[str, str]] = {}
    for chunk in id_chunks(ids):
        for rid, output, thinking in session.execute(
            select(m.ResponseRow.id, m.ResponseRow.output, m.ResponseRow.thinking)
            .where(m.ResponseRow.id.in_(chunk))
        ):
            found[rid] = {"thinking": thinking or "", "output": output}
    return found

