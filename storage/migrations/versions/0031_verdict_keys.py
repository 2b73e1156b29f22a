"""Each judge grade's verdict key (``grades.verdict_key``), kept with the grade.

Every criterion's choice (the option's label, else the verdict) in one string per grade
(storage/services/verdict_keys.py): the judges' disagreement then compares one value per
grade, ~300,000 at 100,000 responses x 3 runs, instead of grouping every grade x criterion
row (2.4 million). ``ix_grades_unkeyed`` (run_id, response_id) holds the grades still
compared criterion by criterion (a criterion without a verdict, or no key yet);
``ix_grades_compared`` (response_id, run_id, score, verdict_key) lets the keys' and the
scores' GROUP BY response read the index alone, not the table. The keys
of existing grades are filled here from their criterion rows, a chunk at a time, in the
upgrade's transaction (a killed upgrade leaves none half-filled; the fill writes only NULL
keys, so it may also run again). No existing value is changed.

Revision ID: 0031_verdict_keys
Revises: 0030_queue_reads
Create Date: 2026-11-30 03:10:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0031_verdict_keys"
down_revision: str | None = "0030_queue_reads"
branch_labels: str | None = None
depends_on: str | None = None

UNKEYED = sa.text("verdict_key IS NULL OR verdict_key = '?'")


def upgrade() -> None:
    from storage.services import verdict_keys

    with op.batch_alter_table("grades") as batch:
        batch.add_column(sa.Column("verdict_key", sa.Text(), nullable=True))
    verdict_keys.fill(op.get_bind(), only_missing=True)
    op.create_index("ix_grades_unkeyed", "grades", ["run_id", "response_id"],
                    sqlite_where=UNKEYED, postgresql_where=UNKEYED)
    op.create_index("ix_grades_compared", "grades",
                    ["response_id", "run_id", "score", "verdict_key"])


def downgrade() -> None:
    op.drop_index("ix_grades_compared", table_name="grades")
    op.drop_index("ix_grades_unkeyed", table_name="grades")
    with op.batch_alter_table("grades") as batch:
        batch.drop_column("verdict_key")
