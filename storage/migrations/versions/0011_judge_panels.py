"""Judge panels: runs combined into one verdict per criterion by a voting rule.

Revision ID: 0011_judge_panels
Revises: 0003
Create Date: 2026-11-22 18:10:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011_judge_panels"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "judge_panels",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(),
                  sa.ForeignKey("rubric_versions.id",
                                name="fk_judge_panels_rubric_version_id_rubric_versions"),
                  nullable=False),
        sa.Column("dataset_id", sa.Integer(),
                  sa.ForeignKey("datasets.id", name="fk_judge_panels_dataset_id_datasets"),
                  nullable=False),
        sa.Column("rule", sa.String(20), nullable=False),
        sa.Column("scoring", _JSON, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("rule IN ('majority', 'unanimous', 'any', 'weighted')",
                           name="ck_judge_panels_rule"),
        sa.PrimaryKeyConstraint("id", name="pk_judge_panels"),
    )
    op.create_index("ix_judge_panels_rubric_version_id", "judge_panels", ["rubric_version_id"])
    op.create_index("ix_judge_panels_dataset_id", "judge_panels", ["dataset_id"])
    op.create_table(
        "judge_panel_members",
        sa.Column("panel_id", sa.Integer(),
                  sa.ForeignKey("judge_panels.id", ondelete="CASCADE",
                                name="fk_judge_panel_members_panel_id_judge_panels"),
                  nullable=False),
        sa.Column("run_id", sa.Integer(),
                  sa.ForeignKey("grading_runs.id",
                                name="fk_judge_panel_members_run_id_grading_runs"),
                  nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("panel_id", "run_id", name="pk_judge_panel_members"),
    )
    op.create_index("ix_judge_panel_members_run_id", "judge_panel_members", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_judge_panel_members_run_id", table_name="judge_panel_members")
    op.drop_table("judge_panel_members")
    op.drop_index("ix_judge_panels_dataset_id", table_name="judge_panels")
    op.drop_index("ix_judge_panels_rubric_version_id", table_name="judge_panels")
    op.drop_table("judge_panels")
