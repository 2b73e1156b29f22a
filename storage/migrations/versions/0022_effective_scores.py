"""People's score per (response, rubric version) in a table, kept up to date with
``effective_verdicts`` (issue 41).

``effective_scores`` holds, per (rubric version, response) that has effective verdicts, how
many criteria people decided, how many are disputed, and people's score through the one
aggregation function (NULL until every criterion is decided); ``effective_run_scores``
each run's effective score of those responses (its grade with people's decisions in
place). Derived: filled here from ``effective_verdicts`` and the grades with the app's own
code (storage.services.people_scores); no existing table or row is touched.

Revision ID: 0022_effective_scores
Revises: 0021_pair_reviews
Create Date: 2026-11-29 17:10:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

revision: str = "0022_effective_scores"
down_revision: str | None = "0021_pair_reviews"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "effective_scores",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("response_id", sa.Integer(), nullable=False),
        sa.Column("decided", sa.Integer(), nullable=False),
        sa.Column("disputed", sa.Integer(), nullable=False),
        sa.Column("criteria_count", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("raw_score", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["rubric_version_id"], ["rubric_versions.id"],
                                name=op.f("fk_effective_scores_rubric_version_id_rubric_versions"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"],
                                name=op.f("fk_effective_scores_dataset_id_datasets"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["response_id"], ["responses.id"],
                                name=op.f("fk_effective_scores_response_id_responses"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_effective_scores")),
        sa.UniqueConstraint("rubric_version_id", "response_id", name="uq_effective_scores_key"),
    )
    op.create_index("ix_effective_scores_set", "effective_scores",
                    ["rubric_version_id", "dataset_id", "score", "response_id"])
    op.create_index("ix_effective_scores_response", "effective_scores", ["response_id"])
    op.create_table(
        "effective_run_scores",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("response_id", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["grading_runs.id"],
                                name=op.f("fk_effective_run_scores_run_id_grading_runs"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["response_id"], ["responses.id"],
                                name=op.f("fk_effective_run_scores_response_id_responses"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_effective_run_scores")),
        sa.UniqueConstraint("run_id", "response_id", name="uq_effective_run_scores_key"),
    )
    op.create_index("ix_effective_run_scores_response", "effective_run_scores",
                    ["response_id"])

    # Filled with the app's own rule from effective_verdicts (through today's models: a
    # later migration that changes the tables it reads must keep this step working).
    from storage.services import people_scores

    with Session(bind=op.get_bind()) as session:
        session.info["effective_panel_scores_absent"] = True  # comes in 0032
        people_scores.rescore_all(session)
        session.flush()


def downgrade() -> None:
    op.drop_index("ix_effective_run_scores_response", table_name="effective_run_scores")
    op.drop_table("effective_run_scores")
    op.drop_index("ix_effective_scores_response", table_name="effective_scores")
    op.drop_index("ix_effective_scores_set", table_name="effective_scores")
    op.drop_table("effective_scores")
