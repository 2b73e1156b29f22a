"""Initial schema: rubrics and versions, datasets and responses, runs, grades, human verdicts.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 00:06:17
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_datasets")),
        sa.UniqueConstraint("name", name=op.f("uq_datasets_name")),
    )
    op.create_table(
        "rubrics",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rubrics")),
        sa.UniqueConstraint("name", name=op.f("uq_rubrics_name")),
    )
    op.create_table(
        "responses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(length=500), nullable=True),
        sa.Column("query", sa.Text(), nullable=True),
        sa.Column("output", sa.Text(), nullable=False),
        sa.Column("thinking", sa.Text(), nullable=True),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name=op.f("fk_responses_dataset_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_responses")),
        sa.UniqueConstraint(
            "dataset_id", "external_id", name=op.f("uq_responses_dataset_id_external_id")
        ),
    )
    with op.batch_alter_table("responses", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_responses_dataset_id"), ["dataset_id"], unique=False)

    op.create_table(
        "rubric_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rubric_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("frozen_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["rubric_id"],
            ["rubrics.id"],
            name=op.f("fk_rubric_versions_rubric_id_rubrics"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rubric_versions")),
        sa.UniqueConstraint(
            "rubric_id", "number", name=op.f("uq_rubric_versions_rubric_id_number")
        ),
    )
    op.create_table(
        "criteria",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("requirement", sa.Text(), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("section", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["rubric_versions.id"],
            name=op.f("fk_criteria_version_id_rubric_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_criteria")),
        sa.UniqueConstraint("version_id", "position", name=op.f("uq_criteria_version_id_position")),
    )
    op.create_table(
        "grading_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("grader", sa.String(length=40), nullable=False),
        sa.Column("model", sa.String(length=300), nullable=False),
        sa.Column(
            "settings",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_by", sa.String(length=200), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("response_count", sa.Integer(), nullable=False),
        sa.Column("done_count", sa.Integer(), nullable=False),
        sa.Column("failed_count", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("total_tokens", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("unknown_cost_count", sa.Integer(), nullable=False),
        sa.CheckConstraint(
            "grader IN ('per_criterion', 'one_shot', 'rubric_as_judge')",
            name=op.f("ck_grading_runs_grader"),
        ),
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'done', 'failed', 'cancelled')",
            name=op.f("ck_grading_runs_status"),
        ),
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["datasets.id"], name=op.f("fk_grading_runs_dataset_id_datasets")
        ),
        sa.ForeignKeyConstraint(
            ["rubric_version_id"],
            ["rubric_versions.id"],
            name=op.f("fk_grading_runs_rubric_version_id_rubric_versions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grading_runs")),
    )
    with op.batch_alter_table("grading_runs", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_grading_runs_dataset_id"), ["dataset_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_grading_runs_rubric_version_id"), ["rubric_version_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_grading_runs_status"), ["status"], unique=False)

    op.create_table(
        "grades",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("response_id", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("raw_score", sa.Float(), nullable=True),
        sa.Column("llm_raw_score", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("cannot_assess_count", sa.Integer(), nullable=False),
        sa.Column("length_penalty", sa.Float(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("total_tokens", sa.Integer(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("latency_s", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["response_id"],
            ["responses.id"],
            name=op.f("fk_grades_response_id_responses"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["grading_runs.id"],
            name=op.f("fk_grades_run_id_grading_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grades")),
        sa.UniqueConstraint("run_id", "response_id", name=op.f("uq_grades_run_id_response_id")),
    )
    with op.batch_alter_table("grades", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_grades_response_id"), ["response_id"], unique=False)

    op.create_table(
        "human_verdicts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("response_id", sa.Integer(), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(length=20), nullable=False),
        sa.Column("reviewer", sa.String(length=200), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("replaces_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "verdict IN ('MET', 'UNMET', 'CANNOT_ASSESS')", name=op.f("ck_human_verdicts_verdict")
        ),
        sa.ForeignKeyConstraint(
            ["criterion_id"], ["criteria.id"], name=op.f("fk_human_verdicts_criterion_id_criteria")
        ),
        sa.ForeignKeyConstraint(
            ["replaces_id"],
            ["human_verdicts.id"],
            name=op.f("fk_human_verdicts_replaces_id_human_verdicts"),
        ),
        sa.ForeignKeyConstraint(
            ["response_id"], ["responses.id"], name=op.f("fk_human_verdicts_response_id_responses")
        ),
        sa.ForeignKeyConstraint(
            ["rubric_version_id"],
            ["rubric_versions.id"],
            name=op.f("fk_human_verdicts_rubric_version_id_rubric_versions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_human_verdicts")),
        sa.UniqueConstraint(
            "response_id",
            "criterion_id",
            "seq",
            name=op.f("uq_human_verdicts_response_id_criterion_id_seq"),
        ),
    )
    with op.batch_alter_table("human_verdicts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_human_verdicts_criterion_id"), ["criterion_id"], unique=False
        )
        batch_op.create_index(
            "ix_human_verdicts_response_version", ["response_id", "rubric_version_id"], unique=False
        )

    op.create_table(
        "run_responses",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("response_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["response_id"],
            ["responses.id"],
            name=op.f("fk_run_responses_response_id_responses"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["grading_runs.id"],
            name=op.f("fk_run_responses_run_id_grading_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", "response_id", name=op.f("pk_run_responses")),
    )
    with op.batch_alter_table("run_responses", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_run_responses_response_id"), ["response_id"], unique=False
        )

    op.create_table(
        "grade_criteria",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("grade_id", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(length=20), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "verdict IS NULL OR verdict IN ('MET', 'UNMET', 'CANNOT_ASSESS')",
            name=op.f("ck_grade_criteria_verdict"),
        ),
        sa.ForeignKeyConstraint(
            ["criterion_id"], ["criteria.id"], name=op.f("fk_grade_criteria_criterion_id_criteria")
        ),
        sa.ForeignKeyConstraint(
            ["grade_id"],
            ["grades.id"],
            name=op.f("fk_grade_criteria_grade_id_grades"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grade_criteria")),
        sa.UniqueConstraint(
            "grade_id", "criterion_id", name=op.f("uq_grade_criteria_grade_id_criterion_id")
        ),
    )
    with op.batch_alter_table("grade_criteria", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_grade_criteria_criterion_id"), ["criterion_id"], unique=False
        )


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table("grade_criteria", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_grade_criteria_criterion_id"))

    op.drop_table("grade_criteria")
    with op.batch_alter_table("run_responses", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_responses_response_id"))

    op.drop_table("run_responses")
    with op.batch_alter_table("human_verdicts", schema=None) as batch_op:
        batch_op.drop_index("ix_human_verdicts_response_version")
        batch_op.drop_index(batch_op.f("ix_human_verdicts_criterion_id"))

    op.drop_table("human_verdicts")
    with op.batch_alter_table("grades", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_grades_response_id"))

    op.drop_table("grades")
    with op.batch_alter_table("grading_runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_grading_runs_status"))
        batch_op.drop_index(batch_op.f("ix_grading_runs_rubric_version_id"))
        batch_op.drop_index(batch_op.f("ix_grading_runs_dataset_id"))

    op.drop_table("grading_runs")
    op.drop_table("criteria")
    op.drop_table("rubric_versions")
    with op.batch_alter_table("responses", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_responses_dataset_id"))

    op.drop_table("responses")
    op.drop_table("rubrics")
    op.drop_table("datasets")
