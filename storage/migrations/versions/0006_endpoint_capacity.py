"""Throughput: run chunks (several workers split a run), transient-failure marks on grades,
and the capacity each worker learned per provider endpoint.

Revision ID: 0006_endpoint_capacity
Revises: 0007_run_pause
Create Date: 2026-11-22 18:10:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0006_endpoint_capacity"
down_revision: str | None = "0007_run_pause"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("grades") as batch:
        batch.add_column(sa.Column("transient", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
    op.create_table(
        "run_chunks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("pass_no", sa.Integer(), nullable=False),
        sa.Column("first_response_id", sa.Integer(), nullable=False),
        sa.Column("last_response_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("claimed_by", sa.String(length=200), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('open', 'taken', 'done')",
                           name=op.f("ck_run_chunks_status")),
        sa.ForeignKeyConstraint(["run_id"], ["grading_runs.id"],
                                name=op.f("fk_run_chunks_run_id_grading_runs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_chunks")),
        sa.UniqueConstraint("run_id", "pass_no", "first_response_id",
                            name=op.f("uq_run_chunks_run_id_pass_no_first_response_id")),
    )
    op.create_table(
        "endpoint_capacity",
        sa.Column("endpoint", sa.String(length=600), nullable=False),
        sa.Column("holder", sa.String(length=200), nullable=False),
        sa.Column("limit", sa.Float(), nullable=False),
        sa.Column("refusals", sa.Integer(), nullable=False),
        sa.Column("backoff_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("endpoint", "holder", name=op.f("pk_endpoint_capacity")),
    )


def downgrade() -> None:
    op.drop_table("endpoint_capacity")
    op.drop_table("run_chunks")
    with op.batch_alter_table("grades") as batch:
        batch.drop_column("transient")
