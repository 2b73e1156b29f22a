"""Effective human verdicts in a table, kept up to date by every writer (issue 41, step 1).

``effective_verdicts`` holds, per (rubric version, response, criterion) anyone answered, the
consensus decision (storage.services.consensus): agreed / adjudicated / disputed, the verdict
and option that apply, the human verdict that stands and the version it was carried from.
It is derived from the append-only ``human_verdicts``, which this migration leaves as they
are; the table is filled here from them with the same code the app maintains it with
(storage.services.effective_upkeep.rebuild, also the ``rebuild-effective`` command).

Revision ID: 0020_effective_verdicts
Revises: 0019_criterion_order
Create Date: 2026-11-29 10:30:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

revision: str = "0020_effective_verdicts"
down_revision: str | None = "0019_criterion_order"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "effective_verdicts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("response_id", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("verdict", sa.String(length=20), nullable=True),
        sa.Column("option", sa.Text(), nullable=True),
        sa.Column("human_verdict_id", sa.Integer(), nullable=True),
        sa.Column("carried_from", sa.Integer(), nullable=True),
        sa.CheckConstraint("status IN ('agreed', 'adjudicated', 'disputed')",
                           name=op.f("ck_effective_verdicts_status")),
        sa.CheckConstraint("verdict IS NULL OR verdict IN ('MET', 'UNMET', 'CANNOT_ASSESS')",
                           name=op.f("ck_effective_verdicts_verdict")),
        sa.ForeignKeyConstraint(["rubric_version_id"], ["rubric_versions.id"],
                                name=op.f("fk_effective_verdicts_rubric_version_id_rubric_versions"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"],
                                name=op.f("fk_effective_verdicts_dataset_id_datasets"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["response_id"], ["responses.id"],
                                name=op.f("fk_effective_verdicts_response_id_responses"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["criterion_id"], ["criteria.id"],
                                name=op.f("fk_effective_verdicts_criterion_id_criteria"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["human_verdict_id"], ["human_verdicts.id"],
                                name=op.f("fk_effective_verdicts_human_verdict_id_human_verdicts"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_effective_verdicts")),
        sa.UniqueConstraint("rubric_version_id", "response_id", "criterion_id",
                            name="uq_effective_verdicts_key"),
    )
    op.create_index("ix_effective_verdicts_set", "effective_verdicts",
                    ["rubric_version_id", "dataset_id", "response_id", "criterion_id"])
    op.create_index("ix_effective_verdicts_response", "effective_verdicts", ["response_id"])

    # Filled from the history with the app's own rule. This reads human_verdicts, criteria,
    # rubric_versions and responses through today's models: a later migration that changes
    # those tables must keep this step working (or fill the table itself).
    from storage.services import effective_upkeep

    with Session(bind=op.get_bind()) as session:
        effective_upkeep.rebuild(session, scores=False)  # their table comes in 0022
        session.flush()


def downgrade() -> None:
    op.drop_index("ix_effective_verdicts_response", table_name="effective_verdicts")
    op.drop_index("ix_effective_verdicts_set", table_name="effective_verdicts")
    op.drop_table("effective_verdicts")
