"""What a migration test compares before and after: every row of some tables, and the
tables a database has (read with a throwaway engine, so no pool outlives the check)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import create_engine, inspect, text
from sqlalchemy.pool import NullPool


def snapshot(url: str, tables: Sequence[str]) -> dict[str, list[tuple]]:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as c:
        rows = {t: [tuple(r) for r in c.execute(text(f"SELECT * FROM {t} ORDER BY id"))]
                for t in tables}
    engine.dispose()
    return rows


def table_names(url: str) -> set[str]:
    engine = create_engine(url, poolclass=NullPool)
    names = set(inspect(engine).get_table_names())
    engine.dispose()
    return names
