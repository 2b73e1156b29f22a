"""Indexes for the judges' failures (the review queue's and Results' "judge failed").

Two partial indexes, one row per failure only: ``ix_grade_criteria_failed`` (grade_id) where a
criterion's verdict failed (``error IS NOT NULL``) and ``ix_grades_failed`` (run_id,
response_id) where a whole grade failed (``score IS NULL OR error IS NOT NULL``).
``results.failed_ids`` finds the failures through them instead of reading every
grade x criterion of the runs (2.4 million rows at 100,000 responses x 3 runs x 8 criteria).
Nothing else changes; existing rows are indexed by the database.

Revision ID: 0030_queue_reads
Revises: 0028_panel_jobs
Create Date: 2026-11-30 00:05:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0030_queue_reads"
down_revision: str | None = "0028_panel_jobs"
branch_labels: str | None = None
depends_on: str | None = None

CRITERION_FAILED = sa.text("error IS NOT NULL")
GRADE_FAILED = sa.text("score IS NULL OR error IS NOT NULL")


def upgrade() -> None:
    op.create_index("ix_grade_criteria_failed", "grade_criteria", ["grade_id"],
                    sqlite_where=CRITERION_FAILED, postgresql_where=CRITERION_FAILED)
    op.create_index("ix_grades_failed", "grades", ["run_id", "response_id"],
                    sqlite_where=GRADE_FAILED, postgresql_where=GRADE_FAILED)


def downgrade() -> None:
    op.drop_index("ix_grades_failed", table_name="grades")
    op.drop_index("ix_grade_criteria_failed", table_name="grade_criteria")
