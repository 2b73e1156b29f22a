"""Samples: a run may ask the judge several times per criterion; each sample's choice is kept.

``grade_criteria.samples`` holds, in sample order, each sample's choice (MET / UNMET /
CANNOT_ASSESS or an option's label; null for a sample that failed); the row's verdict and
option are their majority (grading.samples). The column is nullable and NULL means "asked
once", which every existing row was: nothing is rewritten. How many samples a run asks is a
run setting (``extra.samples``, absent for one), so runs need no column.

Revision ID: 0017_run_samples
Revises: 0016_calibration_options
Create Date: 2026-11-29 07:00:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017_run_samples"
down_revision: str | None = "0016_calibration_options"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("grade_criteria") as batch:
        batch.add_column(sa.Column(
            "samples", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
            nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("grade_criteria") as batch:
        batch.drop_column("samples")
