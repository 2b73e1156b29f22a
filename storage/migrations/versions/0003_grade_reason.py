"""Grades keep the holistic judge's explanation.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 02:10:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("grades") as batch:
        batch.add_column(sa.Column("reason", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("grades") as batch:
        batch.drop_column("reason")
