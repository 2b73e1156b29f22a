"""An index for the responses' text search (issue 41: the Results and Responses pages' search).

The search (storage.repositories.results.search_clause) is a case-insensitive substring of a
response's id, query or output; it scanned every response (PostgreSQL 100,000: ~0.4 s wall,
1 s CPU for a needle matching nothing).

SQLite: nothing (decided: an FTS5 trigram index, kept by triggers, made an import of
100,000 responses 3-4x slower and its file 100 MB larger to save ~0.2 s of a search that was
already under 0.5 s there; the search scans, as before).

PostgreSQL: the three columns lower()ed and stored (generated columns ``search_*``, which
the models do not name: nothing writes them but the database), searched with LIKE, the same
test as ILIKE (which lower()s both sides on every row: 0.7 s of CPU at 100,000 against
0.12 s); and a GIN index with pg_trgm's ``gin_trgm_ops`` over them. pg_trgm is created here
if it can be (a trusted extension: a user with CREATE on the database may); if not, the
upgrade goes on without the index (the search scans the stored copies) and an administrator
enables it later (docs/deployment/upgrades.md).

Revision ID: 0041_response_search_index
Revises: 0040_agreement_people_kept
Create Date: 2026-11-30 23:00:00
"""

import logging

from alembic import op
from sqlalchemy.exc import DBAPIError

revision: str = "0041_response_search_index"
down_revision: str | None = "0040_agreement_people_kept"
branch_labels: str | None = None
depends_on: str | None = None

PG_COLUMNS = ("ALTER TABLE responses "
              "ADD COLUMN search_external_id text GENERATED ALWAYS AS (lower(external_id)) "
              "STORED, ADD COLUMN search_query text GENERATED ALWAYS AS (lower(query)) STORED, "
              "ADD COLUMN search_output text GENERATED ALWAYS AS (lower(output)) STORED")
PG_INDEX = ("CREATE INDEX IF NOT EXISTS ix_responses_search ON responses USING gin "
            "(search_external_id gin_trgm_ops, search_query gin_trgm_ops, "
            "search_output gin_trgm_ops)")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    bind.exec_driver_sql(PG_COLUMNS)
    try:
        with bind.begin_nested():  # a SAVEPOINT: a refusal must not end the upgrade
            bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DBAPIError as exc:
        logging.getLogger(__name__).warning(
            "pg_trgm could not be created (%s); the responses' search works without its "
            "index. See docs/deployment/upgrades.md (0041) to enable it.",
            str(getattr(exc, "orig", exc)).strip())
        return
    bind.exec_driver_sql(PG_INDEX)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    bind.exec_driver_sql("DROP INDEX IF EXISTS ix_responses_search")  # pg_trgm stays
    bind.exec_driver_sql("ALTER TABLE responses DROP COLUMN search_external_id, "
                         "DROP COLUMN search_query, DROP COLUMN search_output")
