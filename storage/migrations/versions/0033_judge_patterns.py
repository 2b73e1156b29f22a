"""The judges' pattern count of the Agreement report, kept in the database (issue 41).

``judge_pattern_sets`` / ``judge_pattern_rows``: per (rubric version, dataset) the rows of
``agreement_sides.patterns_query`` over the judges' sources, with the judges' keys and stamp
they were counted at. Counting them takes ~7 s at 100,000 responses x 3 runs and a panel;
every new app process paid it. Empty here: the first Agreement read counts and stores them
(storage.services.judge_patterns_kept).

Revision ID: 0033_judge_patterns
Revises: 0032_panel_scores
Create Date: 2026-11-30 09:10:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0033_judge_patterns"
down_revision: str | None = "0032_panel_scores"
branch_labels: str | None = None
depends_on: str | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "judge_pattern_sets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("keys", JSON, nullable=False),
        sa.Column("voters", JSON, nullable=False),
        sa.Column("stamp", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["rubric_version_id"], ["rubric_versions.id"],
                                name=op.f("fk_judge_pattern_sets_rubric_version_id_rubric_versions"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"],
                                name=op.f("fk_judge_pattern_sets_dataset_id_datasets"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judge_pattern_sets")),
        sa.UniqueConstraint("rubric_version_id", "dataset_id",
                            name=op.f("uq_judge_pattern_sets_rubric_version_id_dataset_id")),
    )
    op.create_index("ix_judge_pattern_sets_dataset_id", "judge_pattern_sets", ["dataset_id"])
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


def downgrade() -> None:
    op.drop_table("judge_pattern_rows")
    op.drop_index("ix_judge_pattern_sets_dataset_id", table_name="judge_pattern_sets")
    op.drop_table("judge_pattern_sets")
