"""The index behind the responses' text search (migration 0041_response_search_index).

SQLite: ``responses_search``, an FTS5 table with the trigram tokenizer over the responses'
id, query and output (external content: it keeps only the index, triggers on ``responses``
keep it right). PostgreSQL: one pg_trgm GIN index over the same three columns, which the
planner uses for the search's own ILIKE; without pg_trgm the search scans, as before.
"""

from __future__ import annotations

# Objects the migrations make that the models do not declare (alembic's model comparison
# leaves them out): the FTS5 table, its shadow tables and its triggers; the GIN index.
SEARCH_TABLE = "responses_search"
PG_INDEX = "ix_responses_search"
# PostgreSQL: the three columns lower()ed, stored (generated columns) and indexed
PG_LOWERED = ("search_external_id", "search_query", "search_output")


def outside_models(obj, name: str | None, type_: str, reflected: bool, compare_to) -> bool:
    """alembic ``include_object``: False for the search index's own objects."""
    if name is None:
        return True
    if type_ == "table" and name.startswith(SEARCH_TABLE):
        return False
    if type_ == "column" and name in PG_LOWERED:
        return False
    return not (type_ == "index" and name == PG_INDEX)
