"""Judge panels' decisions in tables, kept up to date when members' grades land (issue 41).

``panel_verdicts`` holds, per (panel, response some member graded, criterion), the panel's
decision (verdict or option, the votes and how it was reached); ``panel_grades`` the
panel's score of the response and the tie rule it was decided with. Both are derived from
the members' grades, which this migration leaves as they are; they are filled here with the
code the app keeps them with (storage.services.panel_upkeep.rebuild, also the
``rebuild-panels`` command), so a panel stored before keeps its own tie rule.

Revision ID: 0023_panel_decisions
Revises: 0022_effective_scores
Create Date: 2026-11-29 17:00:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

revision: str = "0023_panel_decisions"
down_revision: str | None = "0022_effective_scores"
branch_labels: str | None = None
depends_on: str | None = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _keys(table: str) -> list:
    return [
        sa.Column("panel_id", sa.Integer(), nullable=False),
        sa.Column("response_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["panel_id"], ["judge_panels.id"],
                                name=op.f(f"fk_{table}_panel_id_judge_panels"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["response_id"], ["responses.id"],
                                name=op.f(f"fk_{table}_response_id_responses"),
                                ondelete="CASCADE"),
    ]


def upgrade() -> None:
    op.create_table(
        "panel_verdicts",
        *_keys("panel_verdicts"),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(length=20), nullable=True),
        sa.Column("option", sa.Text(), nullable=True),
        sa.Column("met", sa.Float(), nullable=False),
        sa.Column("unmet", sa.Float(), nullable=False),
        sa.Column("abstained", sa.Float(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("tie", sa.Boolean(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("votes", JSONType, nullable=False),
        sa.CheckConstraint("verdict IS NULL OR verdict IN ('MET', 'UNMET', 'CANNOT_ASSESS')",
                           name=op.f("ck_panel_verdicts_verdict")),
        sa.ForeignKeyConstraint(["criterion_id"], ["criteria.id"],
                                name=op.f("fk_panel_verdicts_criterion_id_criteria"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("panel_id", "response_id", "criterion_id",
                                name=op.f("pk_panel_verdicts")),
    )
    op.create_index("ix_panel_verdicts_response_id", "panel_verdicts", ["response_id"])
    op.create_table(
        "panel_grades",
        *_keys("panel_grades"),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("raw_score", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("members_graded", sa.Integer(), nullable=False),
        sa.Column("tie_rule", sa.String(length=20), nullable=False),
        sa.PrimaryKeyConstraint("panel_id", "response_id", name=op.f("pk_panel_grades")),
    )
    op.create_index("ix_panel_grades_response_id", "panel_grades", ["response_id"])
    op.create_index("ix_panel_grades_score", "panel_grades", ["panel_id", "score"])

    # Filled from the members' grades with the app's own rule. This reads judge_panels,
    # grades, grade_criteria, criteria and responses through today's models: a later
    # migration that changes those tables must keep this step working.
    from storage.services import panel_upkeep

    with Session(bind=op.get_bind()) as session:
        session.info["effective_panel_scores_absent"] = True  # comes in 0032
        panel_upkeep.rebuild(session)
        session.flush()


def downgrade() -> None:
    op.drop_index("ix_panel_grades_score", table_name="panel_grades")
    op.drop_index("ix_panel_grades_response_id", table_name="panel_grades")
    op.drop_table("panel_grades")
    op.drop_index("ix_panel_verdicts_response_id", table_name="panel_verdicts")
    op.drop_table("panel_verdicts")
