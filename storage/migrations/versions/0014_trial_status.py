"""Wording trials keep their progress in the database: how many responses they plan, who
runs them and when it last said so, and their cost cap (a reload, a second browser or a
restarted app sees a running or interrupted trial, and a retry keeps the cap).

Revision ID: 0014_trial_status
Revises: 0013_run_examples
Create Date: 2026-11-22 21:30:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0014_trial_status"
down_revision: str | None = "0013_run_examples"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("criterion_trials") as batch:
        batch.add_column(sa.Column("total", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("max_cost", sa.Float(), nullable=True))
        batch.add_column(sa.Column("claimed_by", sa.String(200), nullable=True))
        batch.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("criterion_trials") as batch:
        batch.drop_column("heartbeat_at")
        batch.drop_column("claimed_by")
        batch.drop_column("max_cost")
        batch.drop_column("total")
