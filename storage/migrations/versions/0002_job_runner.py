"""Job runner: the provider request cache and per-run job counters (calls, cache hits, 429s).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 00:14:47
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "provider_cache",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=300), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_provider_cache")),
    )
    op.create_table(
        "run_job_stats",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("provider_calls", sa.Integer(), nullable=False),
        sa.Column("cache_hits", sa.Integer(), nullable=False),
        sa.Column("rate_limited", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["grading_runs.id"],
            name=op.f("fk_run_job_stats_run_id_grading_runs"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_run_job_stats")),
    )


def downgrade() -> None:
    op.drop_table("run_job_stats")
    op.drop_table("provider_cache")
