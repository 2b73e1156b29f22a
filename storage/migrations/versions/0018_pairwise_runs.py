"""Pairwise comparisons stored as runs: a comparison, its matched pairs (and the rows that
could not be judged, with why), and each pair's per-criterion preferences in both orders.

Three new tables; no existing table or row is touched.

Revision ID: 0018_pairwise_runs
Revises: 0017_run_samples
Create Date: 2026-11-29 10:30:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0018_pairwise_runs"
down_revision: str | None = "0017_run_samples"
branch_labels: str | None = None
depends_on: str | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_STATUSES = "status IN ('queued', 'running', 'done', 'failed', 'cancelled')"
_SIDES = "('A', 'B', 'TIE', 'CANNOT_ASSESS')"


def _when(column: str) -> sa.Column:
    return sa.Column(column, sa.DateTime(timezone=True), nullable=True)


def upgrade() -> None:
    op.create_table(
        "comparisons",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(),
                  sa.ForeignKey("rubric_versions.id",
                                name=op.f("fk_comparisons_rubric_version_id_rubric_versions")),
                  nullable=False),
        sa.Column("a_dataset_id", sa.Integer(),
                  sa.ForeignKey("datasets.id", name=op.f("fk_comparisons_a_dataset_id_datasets")),
                  nullable=False),
        sa.Column("b_dataset_id", sa.Integer(),
                  sa.ForeignKey("datasets.id", name=op.f("fk_comparisons_b_dataset_id_datasets")),
                  nullable=False),
        sa.Column("split_column", sa.String(200), nullable=True),
        sa.Column("a_value", sa.Text(), nullable=True),
        sa.Column("b_value", sa.Text(), nullable=True),
        sa.Column("a_label", sa.String(400), nullable=False),
        sa.Column("b_label", sa.String(400), nullable=False),
        sa.Column("match_by", sa.String(10), nullable=False),
        sa.Column("holistic", sa.Boolean(), nullable=False),
        sa.Column("model", sa.String(300), nullable=False),
        sa.Column("settings", _JSON, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("pair_count", sa.Integer(), nullable=False),
        sa.Column("done_count", sa.Integer(), nullable=False),
        sa.Column("failed_count", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("unknown_cost_count", sa.Integer(), nullable=False),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        _when("heartbeat_at"),
        sa.Column("created_by", sa.String(320), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _when("started_at"),
        _when("finished_at"),
        sa.CheckConstraint(_STATUSES, name=op.f("ck_comparisons_status")),
        sa.CheckConstraint("match_by IN ('id', 'query')", name=op.f("ck_comparisons_match_by")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_comparisons")),
    )
    for column in ("rubric_version_id", "a_dataset_id", "b_dataset_id", "status"):
        op.create_index(f"ix_comparisons_{column}", "comparisons", [column])

    op.create_table(
        "comparison_pairs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("comparison_id", sa.Integer(),
                  sa.ForeignKey("comparisons.id", ondelete="CASCADE",
                                name=op.f("fk_comparison_pairs_comparison_id_comparisons")),
                  nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("match_key", sa.Text(), nullable=False),
        sa.Column("response_a_id", sa.Integer(),
                  sa.ForeignKey("responses.id", ondelete="CASCADE",
                                name=op.f("fk_comparison_pairs_response_a_id_responses")),
                  nullable=True),
        sa.Column("response_b_id", sa.Integer(),
                  sa.ForeignKey("responses.id", ondelete="CASCADE",
                                name=op.f("fk_comparison_pairs_response_b_id_responses")),
                  nullable=True),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("state", sa.String(10), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("winner", sa.String(5), nullable=True),
        sa.Column("inconsistent_count", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        _when("judged_at"),
        sa.CheckConstraint("kind IN ('pair', 'identical', 'only_a', 'only_b')",
                           name=op.f("ck_comparison_pairs_kind")),
        sa.CheckConstraint("state IS NULL OR state IN ('pending', 'done', 'failed')",
                           name=op.f("ck_comparison_pairs_state")),
        sa.CheckConstraint("winner IS NULL OR winner IN ('A', 'B', 'TIE')",
                           name=op.f("ck_comparison_pairs_winner")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_comparison_pairs")),
        sa.UniqueConstraint("comparison_id", "position",
                            name=op.f("uq_comparison_pairs_comparison_id_position")),
    )
    op.create_index("ix_comparison_pairs_comparison_kind_state", "comparison_pairs",
                    ["comparison_id", "kind", "state"])
    op.create_index("ix_comparison_pairs_response_a_id", "comparison_pairs", ["response_a_id"])
    op.create_index("ix_comparison_pairs_response_b_id", "comparison_pairs", ["response_b_id"])

    op.create_table(
        "comparison_preferences",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("pair_id", sa.Integer(),
                  sa.ForeignKey("comparison_pairs.id", ondelete="CASCADE",
                                name=op.f("fk_comparison_preferences_pair_id_comparison_pairs")),
                  nullable=False),
        sa.Column("criterion_id", sa.Integer(),
                  sa.ForeignKey("criteria.id",
                                name=op.f("fk_comparison_preferences_criterion_id_criteria")),
                  nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("first", sa.String(20), nullable=True),
        sa.Column("second", sa.String(20), nullable=True),
        sa.Column("first_reason", sa.Text(), nullable=False),
        sa.Column("second_reason", sa.Text(), nullable=False),
        sa.Column("preference", sa.String(20), nullable=True),
        sa.Column("consistent", sa.Boolean(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.CheckConstraint(f"first IS NULL OR first IN {_SIDES}",
                           name=op.f("ck_comparison_preferences_first")),
        sa.CheckConstraint(f"second IS NULL OR second IN {_SIDES}",
                           name=op.f("ck_comparison_preferences_second")),
        sa.CheckConstraint(f"preference IS NULL OR preference IN {_SIDES}",
                           name=op.f("ck_comparison_preferences_preference")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_comparison_preferences")),
        sa.UniqueConstraint("pair_id", "position",
                            name=op.f("uq_comparison_preferences_pair_id_position")),
    )
    op.create_index("ix_comparison_preferences_criterion_id", "comparison_preferences",
                    ["criterion_id"])


def downgrade() -> None:
    op.drop_table("comparison_preferences")
    op.drop_table("comparison_pairs")
    op.drop_table("comparisons")
