"""Two text columns of one upload as the two sources of a comparison.

A comparison pairs stored responses (``comparison_pairs`` names a response on each side),
and an upload keeps one response text per row — the other columns are the row's metadata.
So each chosen column becomes a dataset of its own, one response per row with the row's
id, query and metadata (the two text columns left out), named ``<dataset> · <column>``:
no new table, and the datasets can be graded like any other. Run again on the same columns
(a retry, a second comparison), the datasets already made are used, not copied again.
Everything is checked before anything is written; a name taken by other responses, a row
without a text in one column, or columns with the same text in every row are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from storage import models as m
from storage.engine import SessionFactory
from storage.errors import InvalidInputError
from storage.repositories import datasets as dataset_repo
from storage.services import datasets
from storage.services.reviewers import Actor, Role, require

RESPONSE_TEXT = ""  # the column the upload mapped to the response text


@dataclass(frozen=True)
class ColumnSources:
    a_dataset_id: int
    b_dataset_id: int
    made: tuple[str, ...]  # names of the datasets made now (the others existed)


def column_name(column: str) -> str:
    return "response text" if column == RESPONSE_TEXT else column


def _text(row: m.ResponseRow, column: str) -> str | None:
    value = row.output if column == RESPONSE_TEXT else (row.meta or {}).get(column)
    return value if isinstance(value, str) and value.strip() else None


def _rows(responses: list[m.ResponseRow], column: str, columns: tuple[str, str],
          dataset: str) -> list[dict]:
    rows = []
    for r in responses:
        text = _text(r, column)
        where = f"response {r.external_id}" if r.external_id else f"response #{r.id}"
        if text is None:
            raise InvalidInputError(
                f"{dataset}, {where}: no text in the column {column_name(column)!r}; every "
                "row needs a text in both columns (fill it, or compare other columns)")
        extra = {k: v for k, v in (r.meta or {}).items() if k not in columns}
        rows.append({**extra, "id": r.external_id or f"#{r.id}", "query": r.query,
                     "text": text})
    return rows


def _same(session, dataset_id: int, rows: list[dict]) -> bool:
    stored = [(r.external_id, r.query, r.output) for r in session.scalars(
        select(m.ResponseRow).where(m.ResponseRow.dataset_id == dataset_id)
        .order_by(m.ResponseRow.id))]
    return stored == [(r["id"], r["query"], r["text"]) for r in rows]


def sources_from_columns(sessions: SessionFactory, dataset_id: int, column_a: str,
                         column_b: str, *, actor: Actor) -> ColumnSources:
    """The datasets holding ``column_a`` and ``column_b`` of the dataset's rows (made now, or
    the ones made before from the same rows)."""
    require(actor, Role.ADMIN, "start a comparison")
    if column_a == column_b:
        raise InvalidInputError("choose two different columns to compare")
    columns = (column_a, column_b)
    with sessions() as session:
        dataset_name = dataset_repo.get_dataset(session, dataset_id).name
        responses = list(session.scalars(select(m.ResponseRow)
                                         .where(m.ResponseRow.dataset_id == dataset_id)
                                         .order_by(m.ResponseRow.id)))
        if not responses:
            raise InvalidInputError(f"{dataset_name} has no responses to compare")
        wanted = [(f"{dataset_name} · {column_name(c)}", _rows(responses, c, columns,
                                                              dataset_name)) for c in columns]
        if all(a["text"] == b["text"] for a, b in zip(wanted[0][1], wanted[1][1], strict=True)):
            raise InvalidInputError(
                f"the columns {column_name(column_a)!r} and {column_name(column_b)!r} hold the "
                "same text in every row: nothing to compare")
        found: list[int | None] = []
        for name, rows in wanted:
            existing = dataset_repo.find_dataset_by_name(session, name)
            if existing is not None and not _same(session, existing.id, rows):
                raise InvalidInputError(
                    f"a dataset named {name!r} exists with other responses; rename it on the "
                    "Responses page, then start the comparison again")
            found.append(existing.id if existing is not None else None)
    ids, made = [], []
    for (name, rows), existing_id in zip(wanted, found, strict=True):
        if existing_id is None:
            existing_id = datasets.create_dataset(
                sessions, name, responses=rows, actor=actor,
                description=f"The column {column_name(columns[len(ids)])!r} of "
                            f"{dataset_name}, for a comparison").id
            made.append(name)
        ids.append(existing_id)
    return ColumnSources(ids[0], ids[1], tuple(made))
