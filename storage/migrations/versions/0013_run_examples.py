"""Few-shot calibration: the reviewed examples each calibrated run showed its judge.

Revision ID: 0013_run_examples
Revises: 0005_several_reviewers
Create Date: 2026-11-22 21:30:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0013_run_examples"
down_revision: str | None = "0005_several_reviewers"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "run_examples",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("response_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(10), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("carried_from", sa.Integer(), nullable=True),
        sa.Column("human_verdict_id", sa.Integer(), nullable=True),
        sa.CheckConstraint("role IN ('example', 'reserve')", name="ck_run_examples_role"),
        sa.CheckConstraint("verdict IN ('MET', 'UNMET')", name="ck_run_examples_verdict"),
        sa.ForeignKeyConstraint(["run_id"], ["grading_runs.id"], ondelete="CASCADE",
                                name="fk_run_examples_run_id_grading_runs"),
        sa.ForeignKeyConstraint(["criterion_id"], ["criteria.id"], ondelete="CASCADE",
                                name="fk_run_examples_criterion_id_criteria"),
        sa.ForeignKeyConstraint(["response_id"], ["responses.id"], ondelete="CASCADE",
                                name="fk_run_examples_response_id_responses"),
        sa.ForeignKeyConstraint(["human_verdict_id"], ["human_verdicts.id"],
                                ondelete="SET NULL",
                                name="fk_run_examples_human_verdict_id_human_verdicts"),
        sa.PrimaryKeyConstraint("id", name="pk_run_examples"),
        sa.UniqueConstraint("run_id", "criterion_id", "response_id",
                            name="uq_run_examples_run_id_criterion_id_response_id"),
    )
    op.create_index("ix_run_examples_response_id", "run_examples", ["response_id"])


def downgrade() -> None:
    op.drop_index("ix_run_examples_response_id", table_name="run_examples")
    op.drop_table("run_examples")
