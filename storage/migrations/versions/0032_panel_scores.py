"""Judge panels' effective scores of the reviewed responses, kept (issue 41).

``effective_panel_scores``: per (panel, reviewed response with a stored panel grade) the
panel's score with people's decisions in place, as ``effective_run_scores`` keeps a run's.
The Results page's panel column read them by aggregating every reviewed response's panel
grade again on each new verdict (3-7 s at 100,000 responses, 5,000 reviewed). Filled here
with the app's own code (storage.services.panel_scores); no existing row is touched.

Revision ID: 0032_panel_scores
Revises: 0031_verdict_keys
Create Date: 2026-11-30 03:15:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

revision: str = "0032_panel_scores"
down_revision: str | None = "0031_verdict_keys"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "effective_panel_scores",
        sa.Column("panel_id", sa.Integer(), nullable=False),
        sa.Column("response_id", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["panel_id"], ["judge_panels.id"],
                                name=op.f("fk_effective_panel_scores_panel_id_judge_panels"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["response_id"], ["responses.id"],
                                name=op.f("fk_effective_panel_scores_response_id_responses"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("panel_id", "response_id",
                                name=op.f("pk_effective_panel_scores")),
    )
    op.create_index("ix_effective_panel_scores_response_id", "effective_panel_scores",
                    ["response_id"])

    # Filled with the app's own rule (through today's models: a later migration that
    # changes the tables it reads must keep this step working).
    from storage.services import panel_scores

    with Session(bind=op.get_bind()) as session:
        panel_scores.rescore_all(session)
        session.flush()


def downgrade() -> None:
    op.drop_index("ix_effective_panel_scores_response_id",
                  table_name="effective_panel_scores")
    op.drop_table("effective_panel_scores")
