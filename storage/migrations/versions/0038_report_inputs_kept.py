"""The judges' pattern count kept as one value per set, not one row per pattern (issue 41).

``judge_pattern_sets.rows``: the count's rows in their order as columns of raw numbers
(storage.services.agreement_judge_store). Reading 177,000 ``judge_pattern_rows`` back at
100,000 responses and building them again took ~0.5 s of every new process's Agreement
report; one value is read in milliseconds. The sets stored before are deleted (they are
derived: the next Agreement read counts and stores them again) and ``judge_pattern_rows``
is dropped.

Revision ID: 0038_report_inputs_kept
Revises: 0037_results_reads
Create Date: 2026-11-30 16:30:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0038_report_inputs_kept"
down_revision: str | None = "0037_results_reads"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute("DELETE FROM judge_pattern_sets")  # derived: counted again when read
    op.drop_table("judge_pattern_rows")
    with op.batch_alter_table("judge_pattern_sets") as batch:
        batch.add_column(sa.Column("rows", sa.LargeBinary(), nullable=False))


def downgrade() -> None:
    op.execute("DELETE FROM judge_pattern_sets")
    with op.batch_alter_table("judge_pattern_sets") as batch:
        batch.drop_column("rows")
    op.create_table(
        "judge_pattern_rows",
        sa.Column("set_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("codes", sa.Text(), nullable=False),
        sa.Column("response_id", sa.Integer(), nullable=True),
        sa.Column("rank", sa.BigInteger(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["set_id"], ["judge_pattern_sets.id"],
                                name=op.f("fk_judge_pattern_rows_set_id_judge_pattern_sets"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("set_id", "position", name=op.f("pk_judge_pattern_rows")),
    )
