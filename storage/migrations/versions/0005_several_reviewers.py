"""Several reviewers per response: a verdict history per reviewer, adjudications, review sets.

Existing single-reviewer data is kept whole. Every verdict stays (same id, verdict, reviewer,
note, time); each reviewer's verdicts become their own stream (``seq`` renumbered, ``replaces``
pointing at that reviewer's previous verdict). Where the reviewers' current verdicts on a
criterion now differ, the verdict that was in force (the last save, as the old rule had it) is
recorded as an adjudication by whoever saved it, so no effective score changes.

Revision ID: 0005_several_reviewers
Revises: 0006_endpoint_capacity
Create Date: 2026-11-22 18:00:00
"""

from collections import defaultdict

import sqlalchemy as sa
from alembic import op

revision: str = "0005_several_reviewers"
down_revision: str | None = "0006_endpoint_capacity"
branch_labels: str | None = None
depends_on: str | None = None

_KEPT_NOTE = ("kept from the single-reviewer history: this was the verdict in force "
              "(the last save) when several reviewers were introduced")


def upgrade() -> None:
    with op.batch_alter_table("human_verdicts") as batch:
        batch.add_column(sa.Column("stream", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("reviewer_key", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("review_seconds", sa.Float(), nullable=True))
        batch.drop_constraint("uq_human_verdicts_response_id_criterion_id_seq", type_="unique")

    _split_streams(op.get_bind())

    with op.batch_alter_table("human_verdicts") as batch:
        batch.alter_column("stream", existing_type=sa.String(length=200), nullable=False)
        batch.alter_column("reviewer_key", existing_type=sa.String(length=200), nullable=False)
        batch.create_unique_constraint(
            "uq_human_verdicts_response_id_criterion_id_stream_seq",
            ["response_id", "criterion_id", "stream", "seq"])

    op.create_table(
        "review_sets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(), nullable=False),
        sa.Column("reviewers_per_response", sa.Integer(), nullable=False),
        sa.Column("sample_size", sa.Integer(), nullable=False),
        sa.Column("updated_by", sa.String(length=200), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("reviewers_per_response >= 1",
                           name=op.f("ck_review_sets_reviewers_per_response")),
        sa.CheckConstraint("sample_size >= 0", name=op.f("ck_review_sets_sample_size")),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE",
                                name=op.f("fk_review_sets_dataset_id_datasets")),
        sa.ForeignKeyConstraint(["rubric_version_id"], ["rubric_versions.id"],
                                ondelete="CASCADE",
                                name=op.f("fk_review_sets_rubric_version_id_rubric_versions")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_review_sets")),
        sa.UniqueConstraint("dataset_id", "rubric_version_id",
                            name=op.f("uq_review_sets_dataset_id_rubric_version_id")),
    )


def _split_streams(bind) -> None:
    hv = sa.table(
        "human_verdicts",
        sa.column("id", sa.Integer), sa.column("response_id", sa.Integer),
        sa.column("rubric_version_id", sa.Integer), sa.column("criterion_id", sa.Integer),
        sa.column("stream", sa.String), sa.column("seq", sa.Integer),
        sa.column("verdict", sa.String), sa.column("reviewer_key", sa.String),
        sa.column("reviewer", sa.String), sa.column("note", sa.Text),
        sa.column("replaces_id", sa.Integer),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    rows = bind.execute(sa.select(
        hv.c.id, hv.c.response_id, hv.c.rubric_version_id, hv.c.criterion_id, hv.c.verdict,
        hv.c.reviewer, hv.c.created_at).order_by(hv.c.seq, hv.c.id)).all()
    streams: dict[tuple, list] = defaultdict(list)
    last: dict[tuple, object] = {}
    for row in rows:
        streams[row.response_id, row.criterion_id, row.reviewer].append(row)
        last[row.response_id, row.criterion_id] = row  # the old current verdict
    updates = []
    current: dict[tuple, dict[str, str]] = defaultdict(dict)
    for (rid, cid, reviewer), items in streams.items():
        previous = None
        for seq, row in enumerate(items, start=1):
            updates.append({"b_id": row.id, "b_seq": seq, "b_stream": reviewer,
                            "b_key": reviewer, "b_replaces": previous})
            previous = row.id
        current[rid, cid][reviewer] = items[-1].verdict
    if updates:
        bind.execute(
            hv.update().where(hv.c.id == sa.bindparam("b_id")).values(
                seq=sa.bindparam("b_seq"), stream=sa.bindparam("b_stream"),
                reviewer_key=sa.bindparam("b_key"), replaces_id=sa.bindparam("b_replaces")),
            updates)
    kept = [
        {"response_id": rid, "rubric_version_id": row.rubric_version_id, "criterion_id": cid,
         "stream": "", "seq": 1, "verdict": row.verdict, "reviewer_key": row.reviewer,
         "reviewer": row.reviewer, "note": _KEPT_NOTE, "replaces_id": None,
         "created_at": row.created_at}
        for (rid, cid), row in last.items() if len(set(current[rid, cid].values())) > 1
    ]
    if kept:
        bind.execute(hv.insert(), kept)


def downgrade() -> None:
    op.drop_table("review_sets")
    bind = op.get_bind()
    hv = sa.table("human_verdicts", sa.column("id", sa.Integer),
                  sa.column("stream", sa.String), sa.column("response_id", sa.Integer),
                  sa.column("criterion_id", sa.Integer), sa.column("seq", sa.Integer),
                  sa.column("replaces_id", sa.Integer))
    # One history per (response, criterion) again, in the order the verdicts were saved;
    # adjudications become ordinary verdicts (the latest one stays current as before).
    rows = bind.execute(sa.select(hv.c.id, hv.c.response_id, hv.c.criterion_id)
                        .order_by(hv.c.id)).all()
    seqs: dict[tuple, int] = defaultdict(int)
    previous: dict[tuple, int] = {}
    updates = []
    for row in rows:
        key = (row.response_id, row.criterion_id)
        seqs[key] += 1
        updates.append({"b_id": row.id, "b_seq": seqs[key], "b_replaces": previous.get(key)})
        previous[key] = row.id
    with op.batch_alter_table("human_verdicts") as batch:
        batch.drop_constraint("uq_human_verdicts_response_id_criterion_id_stream_seq",
                              type_="unique")
    if updates:
        bind.execute(hv.update().where(hv.c.id == sa.bindparam("b_id")).values(
            seq=sa.bindparam("b_seq"), replaces_id=sa.bindparam("b_replaces")), updates)
    with op.batch_alter_table("human_verdicts") as batch:
        batch.drop_column("review_seconds")
        batch.drop_column("reviewer_key")
        batch.drop_column("stream")
        batch.create_unique_constraint("uq_human_verdicts_response_id_criterion_id_seq",
                                       ["response_id", "criterion_id", "seq"])
