"""A kept row's large bytes values (the kept rows' arrays: 5-16 MB at 100,000 responses)
written and read without whole extra copies (issue 41).

On SQLite a bound value is copied by the driver, and SQLite builds the row's record in one
piece with it: a 16 MB value held three times over while it is written (the judges' inputs
stored after a grade lands: ~38 MB of the Agreement page's peak), twice while a select reads
it. Here SQLite's incremental blob I/O does both: the row is inserted with a zero-filled
value of the right length, then the bytes are written into its place a chunk at a time; a
read asks for the bytes of that place only (one copy: the value returned). PostgreSQL
(psycopg) takes the value as it is, and reads it in the binary format
(``plain_rows.binary_row``).

A read is one snapshot: the row's other columns and its values are read in the same read
transaction, and only while the row still matches what the caller checked (its stamp): a
row replaced by another process meanwhile reads as none (SQLite gives the new row the old
one's id).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import LargeBinary, func, insert, select
from sqlalchemy.orm import Session

from storage.plain_rows import binary_row

CHUNK = 1 << 20  # bytes written or read at a time through a blob handle
BIG = 1 << 16  # bytes from which a value goes through SQLite's blob I/O


def _bytes_like(value: Any) -> bool:
    return isinstance(value, bytes | bytearray | memoryview)


def insert_row(session: Session, model, values: dict) -> None:
    """Insert one row of ``model`` with ``values`` (column: value) in ``session``'s
    transaction; on SQLite its bytes values of ``BIG`` bytes or more are written through
    blob I/O."""
    connection = session.connection()
    big = ({column: value for column, value in values.items()
            if _bytes_like(value) and len(value) >= BIG}
           if connection.dialect.name == "sqlite" else {})
    if not big:
        # the values as the execution's parameters, not in the statement: the engine's
        # cache of compiled statements keeps the first statement of each shape, and with
        # it values written into it (26 MB of kept rows' arrays held for the process's life)
        connection.execute(insert(model), values)
        return
    table = model.__table__
    small = {column: value for column, value in values.items() if column not in big}
    result = connection.execute(
        insert(model).values({column: func.zeroblob(len(value))
                              for column, value in big.items()}), small)
    row_id = result.inserted_primary_key[0]
    raw = connection.connection.driver_connection
    for column, value in big.items():
        view = memoryview(value).cast("B")
        with raw.blobopen(table.name, table.c[column].name, row_id) as blob:
            for at in range(0, len(view), CHUNK):
                blob.write(view[at:at + CHUNK])
        del view


def read_row(session: Session, model, row_id: int, columns: Sequence,
             where: Sequence = ()) -> tuple | None:
    """``columns`` (the model's attributes) of ``model``'s row ``row_id`` if it also matches
    ``where`` (conditions on its columns: the stamp the caller checked), else None; in one
    snapshot. On SQLite its bytes columns through blob I/O, on PostgreSQL the row in the
    binary format."""
    connection = session.connection()
    if connection.dialect.name != "sqlite":
        return binary_row(connection, select(*columns).where(
            model.__table__.c.id == row_id, *where))
    raw = connection.connection.driver_connection
    began = not raw.in_transaction
    if began:  # a read transaction: the select and the blob handles see the same row
        raw.execute("BEGIN")
    try:
        binary = [isinstance(column.type, LargeBinary) for column in columns]
        found = connection.execute(select(*(
            func.length(column) if is_binary else column
            for column, is_binary in zip(columns, binary, strict=True)
        )).where(model.__table__.c.id == row_id, *where)).one_or_none()
        if found is None:
            return None
        table = model.__table__.name
        values = []
        for column, is_binary, value in zip(columns, binary, found, strict=True):
            if is_binary and value is not None:
                with raw.blobopen(table, column.name, row_id, readonly=True) as blob:
                    value = blob.read()
            values.append(value)
        return tuple(values)
    finally:
        if began:
            raw.commit()
