"""The index behind the responses' text search (migration 0041_response_search_index).

PostgreSQL: the three columns lower()ed and stored (generated columns) and one pg_trgm GIN
index over them, which the planner uses for the search's LIKE; without pg_trgm the search
scans those copies. SQLite: no index (the search scans; see the migration for why).
"""

from __future__ import annotations

# Objects the migration makes that the models do not declare (alembic's model comparison
# leaves them out): the generated columns and the GIN index.
PG_INDEX = "ix_responses_search"
# PostgreSQL: the three columns lower()ed, stored (generated columns) and indexed
PG_LOWERED = ("search_external_id", "search_query", "search_output")


def outside_models(obj, name: str | None, type_: str, reflected: bool, compare_to) -> bool:
    """alembic ``include_object``: False for the search index's own objects."""
    if name is None:
        return True
    if type_ == "column" and name in PG_LOWERED:
        return False
    return not (type_ == "index" and name == PG_INDEX)
