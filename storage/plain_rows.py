"""A Core select's rows as the database driver's own tuples, for the reads of 100,000s of
rows (issue 41).

Iterating a SQLAlchemy result fetches row by row through two layers (SQLAlchemy's
``fetchone`` and the driver's), ~1 µs a row: at 100,000 responses the Agreement report
read ~800,000 rows that way. When no column needs converting (the result has no type
processors: integers, floats, text), the driver's ``fetchall`` gives the very values in
one call. Any other result (a column SQLAlchemy converts, a streamed or buffered result)
is read as SQLAlchemy's rows, as before; both unpack alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Executable
from sqlalchemy.exc import MultipleResultsFound

try:  # the plain (unbuffered) fetch strategy: rows are still at the driver's cursor
    from sqlalchemy.engine.cursor import _DEFAULT_FETCH
except ImportError:  # another SQLAlchemy: always SQLAlchemy's rows
    _DEFAULT_FETCH = None


def plain_rows(connection: Connection, query: Executable) -> Sequence[Any]:
    """Every row of ``query`` (tuples or SQLAlchemy rows: the same values, in order)."""
    result = connection.execute(query)
    try:
        plain = (_DEFAULT_FETCH is not None
                 and getattr(result, "cursor_strategy", None) is _DEFAULT_FETCH
                 and getattr(result, "cursor", None) is not None
                 and getattr(result._metadata, "_effective_processors", ()) is None)
        return result.cursor.fetchall() if plain else result.all()
    finally:
        result.close()


def binary_row(connection: Connection, query: Executable) -> Sequence[Any] | None:
    """The one row of ``query`` (None if none), for a row of large bytes (the kept rows'
    arrays: 5-15 MB at 100,000 responses). psycopg reads results in PostgreSQL's text format
    unless asked, where a ``bytea`` is hex: twice the bytes on the wire, then decoded in
    Python (a 15 MB value: ~0.15 s against ~0.03 s in the binary format). On PostgreSQL
    through psycopg the row is read in the binary format (the same values: bytes, text,
    numbers); elsewhere as SQLAlchemy's row. ``query``: plain bound parameters only."""
    dialect = connection.dialect
    if dialect.name != "postgresql" or dialect.driver != "psycopg":
        return connection.execute(query).one_or_none()
    compiled = query.compile(dialect=dialect)
    # SQLAlchemy's own connection (its transaction), read through the driver's cursor
    with connection.connection.driver_connection.cursor(binary=True) as cursor:
        cursor.execute(str(compiled), compiled.params)
        rows = cursor.fetchall()
    if len(rows) > 1:
        raise MultipleResultsFound("Multiple rows were found when one or none was required")
    return rows[0] if rows else None
