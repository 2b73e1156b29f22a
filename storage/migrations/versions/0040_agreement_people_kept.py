"""People's side of the Agreement report kept in the database (issue 41).

``agreement_people_kept``: per (rubric version, dataset) what the report reads row by row of
people's side (the responses' labels, the verdicts in force, each reviewer's current
verdicts, the runs' verdicts on the reviewed responses) as arrays, with the stamp they were
made at (storage.services.agreement_people_store). A new process read ~300,000 rows again
(~0.9 s at 100,000 responses). Empty here: the first Agreement read makes and stores it.

Revision ID: 0040_agreement_people_kept
Revises: 0039_agreement_inputs_kept
Create Date: 2026-11-30 22:30:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0040_agreement_people_kept"
down_revision: str | None = "0039_agreement_inputs_kept"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "agreement_people_kept",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("stamp", sa.Text(), nullable=False),
        sa.Column("figures", sa.Text(), nullable=False),
        sa.Column("arrays", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["rubric_version_id"], ["rubric_versions.id"],
            name=op.f("fk_agreement_people_kept_rubric_version_id_rubric_versions"),
            ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"],
                                name=op.f("fk_agreement_people_kept_dataset_id_datasets"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agreement_people_kept")),
        sa.UniqueConstraint("rubric_version_id", "dataset_id",
                            name=op.f("uq_agreement_people_kept_rubric_version_id_dataset_id")),
    )
    op.create_index("ix_agreement_people_kept_dataset_id", "agreement_people_kept",
                    ["dataset_id"])


def downgrade() -> None:
    op.drop_index("ix_agreement_people_kept_dataset_id", table_name="agreement_people_kept")
    op.drop_table("agreement_people_kept")
