"""People and roles for team mode, an audit trail, and who created/imported/launched what.

Revision ID: 0004_people_roles
Revises: 0012_criterion_trials
Create Date: 2026-11-22 18:10:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0004_people_roles"
down_revision: str | None = "0012_criterion_trials"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "people",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=320), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=True),
        sa.Column("role_set_by", sa.String(length=320), nullable=True),
        sa.Column("role_set_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("role IS NULL OR role IN ('admin', 'adjudicator', 'reviewer')",
                           name=op.f("ck_people_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_people")),
        sa.UniqueConstraint("key", name=op.f("uq_people_key")),
    )
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("actor", sa.String(length=320), nullable=False),
        sa.Column("action", sa.String(length=60), nullable=False),
        sa.Column("target_kind", sa.String(length=40), nullable=False),
        sa.Column("target_id", sa.Integer(), nullable=True),
        sa.Column("target_name", sa.String(length=400), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
    )
    op.create_index(op.f("ix_audit_events_actor"), "audit_events", ["actor"])
    op.create_index(op.f("ix_audit_events_created_at"), "audit_events", ["created_at"])
    with op.batch_alter_table("rubric_versions") as batch:
        batch.add_column(sa.Column("created_by", sa.String(length=320), nullable=True))
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("imported_by", sa.String(length=320), nullable=True))
    with op.batch_alter_table("grading_runs") as batch:
        batch.add_column(sa.Column("launched_by", sa.String(length=320), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("grading_runs") as batch:
        batch.drop_column("launched_by")
    with op.batch_alter_table("datasets") as batch:
        batch.drop_column("imported_by")
    with op.batch_alter_table("rubric_versions") as batch:
        batch.drop_column("created_by")
    op.drop_index(op.f("ix_audit_events_created_at"), table_name="audit_events")
    op.drop_index(op.f("ix_audit_events_actor"), table_name="audit_events")
    op.drop_table("audit_events")
    op.drop_table("people")
