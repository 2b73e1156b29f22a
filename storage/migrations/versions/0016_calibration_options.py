"""Calibration on multi-choice criteria: the option a recorded example was chosen with.

A calibrated run records the reviewed examples it shows its judge (``run_examples``); on a
multi-choice criterion the example is the option people chose, so the row keeps its label
beside the verdict (MET, as ``human_verdicts`` stores a scored option). The column is
nullable and NULL means "a MET/UNMET example", which every existing row is: nothing is
rewritten.

Revision ID: 0016_calibration_options
Revises: 0015_criterion_kinds
Create Date: 2026-11-29 03:40:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0016_calibration_options"
down_revision: str | None = "0015_criterion_kinds"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("run_examples") as batch:
        batch.add_column(sa.Column("option", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("run_examples") as batch:
        batch.drop_column("option")
