"""Criterion wording trials: a new wording judged on reviewed responses before adoption.

Revision ID: 0012_criterion_trials
Revises: 0011_judge_panels
Create Date: 2026-11-22 18:30:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0012_criterion_trials"
down_revision: str | None = "0011_judge_panels"
branch_labels: str | None = None
depends_on: str | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "criterion_trials",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("base_run_id", sa.Integer(), nullable=False),
        sa.Column("requirement", sa.Text(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("results", _JSON, nullable=False),
        sa.Column("adopted_version_id", sa.Integer(), nullable=True),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["criterion_id"], ["criteria.id"],
                                name="fk_criterion_trials_criterion_id_criteria"),
        sa.ForeignKeyConstraint(["base_run_id"], ["grading_runs.id"],
                                name="fk_criterion_trials_base_run_id_grading_runs"),
        sa.ForeignKeyConstraint(["adopted_version_id"], ["rubric_versions.id"],
                                name="fk_criterion_trials_adopted_version_id_rubric_versions"),
        sa.PrimaryKeyConstraint("id", name="pk_criterion_trials"),
    )
    op.create_index("ix_criterion_trials_criterion_id", "criterion_trials", ["criterion_id"])


def downgrade() -> None:
    op.drop_index("ix_criterion_trials_criterion_id", table_name="criterion_trials")
    op.drop_table("criterion_trials")
