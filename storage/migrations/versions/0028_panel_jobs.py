"""A judge panel's decisions filled by a worker, not inside the request that makes it.

One new table, ``panel_fills``: a row per panel whose ``panel_verdicts`` / ``panel_grades``
are still being filled (storage.jobs.panel_fills). Existing panels are filled already (by
0023): no row, nothing else touched.

Revision ID: 0028_panel_jobs
Revises: 0024_pair_panels
Create Date: 2026-11-29 20:30:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0028_panel_jobs"
down_revision: str | None = "0024_pair_panels"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "panel_fills",
        sa.Column("panel_id", sa.Integer(),
                  sa.ForeignKey("judge_panels.id", ondelete="CASCADE",
                                name=op.f("fk_panel_fills_panel_id_judge_panels")),
                  nullable=False),
        sa.Column("after_response_id", sa.Integer(), nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=True),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("panel_id", name=op.f("pk_panel_fills")),
    )


def downgrade() -> None:
    op.drop_table("panel_fills")
