"""The Results page's reads from indexes alone (issue 41).

The page reads every response's effective score of each selected run (and panel) once per
view: ``responses`` by dataset, ``panel_grades`` by (panel, response) for their score. With
the score in the index these are index-only scans on PostgreSQL and covering-index searches
on SQLite, not a heap read per row. (The grades by (run, response, score) too was tried and
left out: SQLite then took it over the partial indexes of the failures and of the unkeyed
grades, ``ix_grades_failed`` and ``ix_grades_unkeyed``, reading a run's every grade where
it read its failures; ``ix_grades_compared`` already covers a grade's score by response.)

``ix_grades_run_ranked``: a run's scores in order, for a view with no filter (its
histograms count the stored scores, its page by a run's score is the first of them).

``ix_responses_dataset_id`` (dataset_id) becomes (dataset_id, id): the same lookups, and
PostgreSQL reads the dataset's ids from the index (SQLite's held the rowid already).

Revision ID: 0037_results_reads
Revises: 0036_trust_share_kept
Create Date: 2026-11-30 15:40:00
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0037_results_reads"
down_revision: str | None = "0036_trust_share_kept"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # Partial: only a query that asks for scored grades may read it. Whole, SQLite took it
    # for every read of a run's grades (exports in response order, the judges' GROUP BY
    # over the runs): a search by run in score order, then each row looked up.
    op.create_index("ix_grades_run_ranked", "grades", ["run_id", "score", "response_id"],
                    sqlite_where=sa.text("score IS NOT NULL"),
                    postgresql_where=sa.text("score IS NOT NULL"))
    op.create_index("ix_panel_grades_read", "panel_grades",
                    ["panel_id", "response_id", "score"])
    op.create_index("ix_responses_dataset_rows", "responses", ["dataset_id", "id"])
    op.drop_index("ix_responses_dataset_id", table_name="responses")
    if op.get_bind().dialect.name == "sqlite" and op.get_bind().execute(sa.text(
            "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")).first():
        # A database analyzed before: without their own statistics SQLite takes the new
        # indexes for the most selective (a run's 100,000 grades for ten), over the
        # covering scan it chose by the old ones' (the judges' GROUP BY: 0.26 -> 0.37 s).
        for index in ("ix_grades_run_ranked", "ix_panel_grades_read",
                      "ix_responses_dataset_rows"):
            op.execute(f"ANALYZE {index}")


def downgrade() -> None:
    op.create_index("ix_responses_dataset_id", "responses", ["dataset_id"])
    op.drop_index("ix_responses_dataset_rows", table_name="responses")
    op.drop_index("ix_panel_grades_read", table_name="panel_grades")
    op.drop_index("ix_grades_run_ranked", table_name="grades")
