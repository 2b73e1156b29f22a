"""The index behind the responses' text search (migration 0041_response_search_index).

SQLite: ``responses_search``, an FTS5 table with the trigram tokenizer over the responses'
id, query and output (external content: it keeps only the index, triggers on ``responses``
keep it right). PostgreSQL: the three columns lower()ed and stored (generated columns) and
one pg_trgm GIN index over them, which the planner uses for the search's LIKE; without
pg_trgm the search scans those copies.

A later migration that recreates ``responses`` on SQLite (alembic's batch mode copies it to
a new table) drops the triggers with it: it must create them again (0041's ``_SQLITE``).
"""

from __future__ import annotations

# Objects the migrations make that the models do not declare (alembic's model comparison
# leaves them out): the FTS5 table, its shadow tables and its triggers; the generated
# columns and the GIN index.
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
