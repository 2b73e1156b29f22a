"""Criterion order: where each criterion was listed in a one-shot prompt that shuffled them.

``grade_criteria.prompt_position`` (1 = listed first) is kept when a one-shot run shuffled
the criteria per response (run setting ``extra.shuffle_criteria``, grading.criterion_order),
for the verdicts that answer gave; the trust report measures the position effect from it.
The column is nullable and NULL means "not shuffled" (or asked in a call of its own), which
every existing row was: nothing is rewritten.

Revision ID: 0019_criterion_order
Revises: 0018_pairwise_runs
Create Date: 2026-11-29 10:30:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0019_criterion_order"
down_revision: str | None = "0018_pairwise_runs"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("grade_criteria") as batch:
        batch.add_column(sa.Column("prompt_position", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("grade_criteria") as batch:
        batch.drop_column("prompt_position")
