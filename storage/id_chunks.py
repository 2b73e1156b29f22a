"""Ids bound into one ``column.in_(...)`` a bounded number a statement.

Each id in an ``IN ()`` list is a bound parameter, and a statement may hold only so many:
SQLite's limit is 32,766 variables (``SQLITE_MAX_VARIABLE_NUMBER``), PostgreSQL's protocol
65,535 parameters. A list of ids that can grow with a dataset is therefore read (or
deleted, locked) ``id_chunks`` at a time, one statement for each slice.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

# Far below both limits, with room for the statement's other parameters; a module that
# chose another size for its statements passes its own (named) one.
IDS_A_STATEMENT = 500

T = TypeVar("T")


def id_chunks(ids: Sequence[T], size: int = IDS_A_STATEMENT) -> Iterator[Sequence[T]]:
    """The slices of ``ids``, in order, ``size`` at a time (the last one may be shorter;
    none for no ids). Slices of the sequence itself: a list gives lists, a tuple tuples."""
    if size < 1:
        raise ValueError(f"a chunk holds at least one id, not {size}")
    for start in range(0, len(ids), size):
        yield ids[start:start + size]
