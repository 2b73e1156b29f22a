"""The trust report's judges' share and the panels' members' alpha, kept in the database
(issue 41).

``trust_share_sets``: per (rubric version, dataset) the judges' share of the trust report
(storage.services.trust_judges: their figures as JSON, their arrays as raw bytes) with the
judges' keys and stamp it was made at. Making it takes ~8 s at 100,000 responses x 3 runs
and a panel; every new app process paid it. Empty here: the first Agreement read makes and
stores it (storage.services.trust_share_store).

``member_alpha_kept``: per panel its members' alpha per criterion (JSON) with the members'
stamp it was computed at (~1.5 s at 100,000 responses; storage.services.member_alpha_store).

Revision ID: 0036_trust_share_kept
Revises: 0035_verdict_ids_never_reused
Create Date: 2026-11-30 15:40:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0036_trust_share_kept"
down_revision: str | None = "0035_verdict_ids_never_reused"
branch_labels: str | None = None
depends_on: str | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "trust_share_sets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("keys", JSON, nullable=False),
        sa.Column("stamp", sa.Text(), nullable=False),
        sa.Column("figures", sa.Text(), nullable=False),
        sa.Column("arrays", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["rubric_version_id"], ["rubric_versions.id"],
                                name=op.f("fk_trust_share_sets_rubric_version_id_rubric_versions"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"],
                                name=op.f("fk_trust_share_sets_dataset_id_datasets"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trust_share_sets")),
        sa.UniqueConstraint("rubric_version_id", "dataset_id",
                            name=op.f("uq_trust_share_sets_rubric_version_id_dataset_id")),
    )
    op.create_index("ix_trust_share_sets_dataset_id", "trust_share_sets", ["dataset_id"])
    op.create_table(
        "member_alpha_kept",
        sa.Column("panel_id", sa.Integer(), nullable=False),
        sa.Column("stamp", sa.Text(), nullable=False),
        sa.Column("figures", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["panel_id"], ["judge_panels.id"],
                                name=op.f("fk_member_alpha_kept_panel_id_judge_panels"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("panel_id", name=op.f("pk_member_alpha_kept")),
    )


def downgrade() -> None:
    op.drop_table("member_alpha_kept")
    op.drop_index("ix_trust_share_sets_dataset_id", table_name="trust_share_sets")
    op.drop_table("trust_share_sets")
