"""Criterion kinds and reference answers: multi-choice criteria (options, scale type),
required criteria (gates), the option a judge or a person chose, the judge's option order
when it shuffled them, and a response's reference answer.

Every new column is nullable or has a default that means "as before": a criterion without
options is binary and not required, a verdict without an option is a MET / UNMET /
CANNOT_ASSESS verdict, a response without a reference is graded as it always was. No
existing row is rewritten.

Revision ID: 0015_criterion_kinds
Revises: 0014_trial_status
Create Date: 2026-11-28 23:59:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015_criterion_kinds"
down_revision: str | None = "0014_trial_status"
branch_labels: str | None = None
depends_on: str | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("criteria") as batch:
        batch.add_column(sa.Column("options", _JSON, nullable=True))
        batch.add_column(sa.Column("scale_type", sa.String(20), nullable=True))
        batch.add_column(sa.Column("required", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
        batch.create_check_constraint(  # op.f: the name as written, not re-prefixed
            op.f("ck_criteria_scale_type"),
            "scale_type IS NULL OR scale_type IN ('ordinal', 'nominal')")
    with op.batch_alter_table("grade_criteria") as batch:
        batch.add_column(sa.Column("option", sa.Text(), nullable=True))
        batch.add_column(sa.Column("shuffle_order", _JSON, nullable=True))
    with op.batch_alter_table("human_verdicts") as batch:
        batch.add_column(sa.Column("option", sa.Text(), nullable=True))
    with op.batch_alter_table("responses") as batch:
        batch.add_column(sa.Column("reference", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("responses") as batch:
        batch.drop_column("reference")
    with op.batch_alter_table("human_verdicts") as batch:
        batch.drop_column("option")
    with op.batch_alter_table("grade_criteria") as batch:
        batch.drop_column("shuffle_order")
        batch.drop_column("option")
    with op.batch_alter_table("criteria") as batch:
        batch.drop_constraint(op.f("ck_criteria_scale_type"), type_="check")
        batch.drop_column("required")
        batch.drop_column("scale_type")
        batch.drop_column("options")
