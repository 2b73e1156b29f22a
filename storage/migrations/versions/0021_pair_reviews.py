"""People's preferences on comparison pairs: one append-only table of reviewers' and
adjudicators' preferences per (pair, criterion), in streams like human_verdicts.

One new table; no existing table or row is touched.

Revision ID: 0021_pair_reviews
Revises: 0020_effective_verdicts
Create Date: 2026-11-29 10:50:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0021_pair_reviews"
down_revision: str | None = "0020_effective_verdicts"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "pair_reviews",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("pair_id", sa.Integer(),
                  sa.ForeignKey("comparison_pairs.id",
                                name=op.f("fk_pair_reviews_pair_id_comparison_pairs")),
                  nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(),
                  sa.ForeignKey("criteria.id", name=op.f("fk_pair_reviews_criterion_id_criteria")),
                  nullable=True),
        sa.Column("stream", sa.String(200), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("side", sa.String(20), nullable=False),
        sa.Column("swapped", sa.Boolean(), nullable=False),
        sa.Column("reviewer_key", sa.String(200), nullable=False),
        sa.Column("reviewer", sa.String(200), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("replaces_id", sa.Integer(),
                  sa.ForeignKey("pair_reviews.id",
                                name=op.f("fk_pair_reviews_replaces_id_pair_reviews")),
                  nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("side IN ('A', 'B', 'TIE', 'CANNOT_ASSESS')",
                           name=op.f("ck_pair_reviews_side")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pair_reviews")),
        sa.UniqueConstraint("pair_id", "position", "stream", "seq",
                            name=op.f("uq_pair_reviews_pair_id_position_stream_seq")),
    )
    op.create_index("ix_pair_reviews_criterion_id", "pair_reviews", ["criterion_id"])


def downgrade() -> None:
    op.drop_table("pair_reviews")
