"""People's verdicts and pair judgments keep their ids for good on SQLite (AUTOINCREMENT).

The cached pages key on (count, newest id) of ``human_verdicts`` (and of ``pair_reviews``).
Without AUTOINCREMENT SQLite hands out the largest id + 1, so after a deletion that took the
newest rows (deleting a rubric deletes its verdicts) the next saved verdict got a deleted
row's id back, and a page's fingerprint could come out unchanged while its data had changed.
PostgreSQL's sequences never go back: nothing to do there.

Revision ID: 0035_verdict_ids_never_reused
Revises: 0033_judge_patterns
Create Date: 2026-11-30 09:20:00
"""

from alembic import op

revision: str = "0035_verdict_ids_never_reused"
down_revision: str | None = "0033_judge_patterns"
branch_labels: str | None = None
depends_on: str | None = None

TABLES = ("human_verdicts", "pair_reviews")


def _recreate(autoincrement: bool) -> None:
    # The copy keeps every row with its id; SQLite then starts its counter after the largest.
    for table in TABLES:
        with op.batch_alter_table(table, recreate="always",
                                  table_kwargs={"sqlite_autoincrement": autoincrement}):
            pass


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _recreate(True)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _recreate(False)
