"""Panels of pairwise judges: two or more comparisons of the same two sources on one rubric
version, combined per pair and criterion by majority (grading.pairwise.panel).

Two new tables; no existing table or row is touched.

Revision ID: 0024_pair_panels
Revises: 0023_panel_decisions
Create Date: 2026-11-29 17:00:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0024_pair_panels"
down_revision: str | None = "0023_panel_decisions"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "pair_panels",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(),
                  sa.ForeignKey("rubric_versions.id",
                                name=op.f("fk_pair_panels_rubric_version_id_rubric_versions")),
                  nullable=False),
        sa.Column("rule", sa.String(20), nullable=False),
        sa.Column("created_by", sa.String(320), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("rule IN ('majority')", name=op.f("ck_pair_panels_rule")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pair_panels")),
    )
    op.create_index("ix_pair_panels_rubric_version_id", "pair_panels", ["rubric_version_id"])
    op.create_table(
        "pair_panel_members",
        sa.Column("panel_id", sa.Integer(),
                  sa.ForeignKey("pair_panels.id", ondelete="CASCADE",
                                name=op.f("fk_pair_panel_members_panel_id_pair_panels")),
                  nullable=False),
        sa.Column("comparison_id", sa.Integer(),
                  sa.ForeignKey("comparisons.id",
                                name=op.f("fk_pair_panel_members_comparison_id_comparisons")),
                  nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("panel_id", "comparison_id", name=op.f("pk_pair_panel_members")),
    )
    op.create_index("ix_pair_panel_members_comparison_id", "pair_panel_members",
                    ["comparison_id"])


def downgrade() -> None:
    op.drop_index("ix_pair_panel_members_comparison_id", table_name="pair_panel_members")
    op.drop_table("pair_panel_members")
    op.drop_index("ix_pair_panels_rubric_version_id", table_name="pair_panels")
    op.drop_table("pair_panels")
