"""The review queue's id reads: the responses a set covers, ascending, and the external ids
of the ones a page shows. Plain rows (no ORM objects): a queue of 100,000 responses is
read on every visit. Repository functions take a Session and never commit."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage import models as m
from storage.id_chunks import id_chunks


def covered_ids(session: Session, dataset_id: int, run_ids: Sequence[int]) -> list[int]:
    """Every response any of these runs (of this dataset) covers, ascending, as plain rows:
    the first run's ids in order through its primary key; when they are the whole dataset
    (the usual case) no other run can add any, else each run's ids are merged."""
    runs = list(dict.fromkeys(run_ids))
    if not runs:
        return []
    connection = session.connection()

    def of_run(run_id: int) -> list[int]:
        rr = m.RunResponseRow
        return list(connection.execute(
            select(rr.response_id).where(rr.run_id == run_id).order_by(rr.response_id))
            .scalars().all())

    first = of_run(runs[0])
    if len(runs) == 1 or len(first) == connection.execute(
            select(func.count()).select_from(m.ResponseRow)
            .where(m.ResponseRow.dataset_id == dataset_id)).scalar_one():
        return first
    return sorted(set(first).union(*(of_run(run_id) for run_id in runs[1:])))


def dataset_ids(session: Session, dataset_id: int) -> list[int]:
    """A dataset's response ids, ascending, as plain rows."""
    return list(session.connection().execute(
        select(m.ResponseRow.id).where(m.ResponseRow.dataset_id == dataset_id)
        .order_by(m.ResponseRow.id)).scalars().all())


def external_ids_of(session: Session, response_ids: Sequence[int]) -> dict[int, str | None]:
    """The external ids of these responses only (by primary key, in chunks)."""
    ids = list(response_ids)
    found: dict[int, str | None] = {}
    for chunk in id_chunks(ids):
        found.update(session.execute(
            select(m.ResponseRow.id, m.ResponseRow.external_id)
            .where(m.ResponseRow.id.in_(chunk))).all())
    return found
