"""The Agreement report's judges-only inputs kept in the database (issue 41).

``agreement_inputs_kept``: per (rubric version, dataset) the judges' pattern count folded as
the report sums it and every run's and ready panel's grades as arrays (response, score; a
panel's cost), with the judges' keys, alpha's voters, the scored sources and the judges'
stamp they were made at (storage.services.agreement_inputs_store). A new process folded
177,000 rows and read 400,000 scores again (~1 s at 100,000 responses). Empty here: the
first Agreement read makes and stores them.

Revision ID: 0039_agreement_inputs_kept
Revises: 0038_report_inputs_kept
Create Date: 2026-11-30 19:30:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0039_agreement_inputs_kept"
down_revision: str | None = "0038_report_inputs_kept"
branch_labels: str | None = None
depends_on: str | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "agreement_inputs_kept",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("keys", JSON, nullable=False),
        sa.Column("voters", JSON, nullable=False),
        sa.Column("sources", JSON, nullable=False),
        sa.Column("stamp", sa.Text(), nullable=False),
        sa.Column("figures", sa.Text(), nullable=False),
        sa.Column("arrays", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["rubric_version_id"], ["rubric_versions.id"],
            name=op.f("fk_agreement_inputs_kept_rubric_version_id_rubric_versions"),
            ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"],
                                name=op.f("fk_agreement_inputs_kept_dataset_id_datasets"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agreement_inputs_kept")),
        sa.UniqueConstraint("rubric_version_id", "dataset_id",
                            name=op.f("uq_agreement_inputs_kept_rubric_version_id_dataset_id")),
    )
    op.create_index("ix_agreement_inputs_kept_dataset_id", "agreement_inputs_kept",
                    ["dataset_id"])


def downgrade() -> None:
    op.drop_index("ix_agreement_inputs_kept_dataset_id", table_name="agreement_inputs_kept")
    op.drop_table("agreement_inputs_kept")
