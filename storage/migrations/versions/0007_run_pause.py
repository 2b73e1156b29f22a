"""Runs say what their runner is waiting for (a provider's Retry-After, a full disk).

Revision ID: 0007_run_pause
Revises: 0004_people_roles
Create Date: 2026-11-22 18:30:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0007_run_pause"
down_revision: str | None = "0004_people_roles"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("run_job_stats") as batch:
        batch.add_column(sa.Column("notice", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("run_job_stats") as batch:
        batch.drop_column("notice")
