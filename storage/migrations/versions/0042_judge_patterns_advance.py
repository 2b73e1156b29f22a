"""The judges' kept pattern count keeps its open part (issue 41: caches invalidated by what
changed): the responses a grade could still change when it was counted and their share of
the rows, so a grade landing counts those again instead of every judge verdict
(storage.services.agreement_judge_counts.advanced). Two nullable columns; rows stored
before have none and are counted whole once, as before.

Revision ID: 0042_judge_patterns_advance
Revises: 0041_response_search_index
Create Date: 2026-12-01 01:40:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0042_judge_patterns_advance"
down_revision: str | None = "0041_response_search_index"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("judge_pattern_sets") as batch:
        batch.add_column(sa.Column("open_ids", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("open_rows", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("judge_pattern_sets") as batch:
        batch.drop_column("open_rows")
        batch.drop_column("open_ids")
