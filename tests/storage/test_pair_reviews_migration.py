"""Migration 0021 (pair reviews): a database at 0019 with a comparison moves to head
(through 0020) with every row as it was, gains the pair_reviews table (which then takes a
person's preference), and goes back down without it, every other row kept."""

from __future__ import annotations

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from storage.engine import open_database
from storage.services import comparisons
from storage.services.comparisons import Source
from tests.actors import ADMIN
from tests.storage.migration_rows import snapshot, table_names
from tests.storage.test_criterion_kinds_migration import _migrate, _seed_0014

TABLES = ("rubrics", "criteria", "responses", "human_verdicts", "comparisons",
          "comparison_pairs", "comparison_preferences")


def test_upgrade_keeps_every_row_adds_pair_reviews_and_downgrade_removes_it(
        backend, new_database):
    url = new_database(backend)
    _migrate(url, "0014_trial_status")
    _seed_0014(url)
    _migrate(url, "0019_criterion_order")
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as c:  # a second source to compare the seeded response with
        c.execute(text("INSERT INTO datasets (id, name, description, archived, created_at) "
                       "SELECT 2, 'Other', '', archived, created_at FROM datasets WHERE id = 1"))
        c.execute(text("INSERT INTO responses (dataset_id, external_id, query, output, "
                       "metadata, created_at) SELECT 2, external_id, query, output || ' more', "
                       "metadata, created_at FROM responses WHERE dataset_id = 1"))
    engine.dispose()
    sessions = open_database(url)  # opening migrates to head
    made = comparisons.create_comparison(sessions, rubric_version_id=1, a=Source(1),
                                         b=Source(2), model="openai/j", actor=ADMIN)
    sessions.kw["bind"].dispose()
    _migrate(url, "0019_criterion_order", down=True)
    assert "pair_reviews" not in table_names(url)
    before = snapshot(url, TABLES)
    assert before["comparison_pairs"] and before["human_verdicts"]

    _migrate(url, "0021_pair_reviews")
    assert snapshot(url, TABLES) == before
    assert "pair_reviews" in table_names(url)
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as c:
        c.execute(text(
            "INSERT INTO pair_reviews (pair_id, position, criterion_id, stream, seq, side, "
            "swapped, reviewer_key, reviewer, note, created_at) SELECT id, 0, 1, 'ann', 1, "
            "'B', true, 'ann', 'Ann', '', CURRENT_TIMESTAMP FROM comparison_pairs "
            "WHERE comparison_id = :c AND kind = 'pair'"), {"c": made.id})
        assert c.scalar(text("SELECT count(*) FROM pair_reviews")) == made.pair_count
    engine.dispose()

    _migrate(url, "0019_criterion_order", down=True)
    assert "pair_reviews" not in table_names(url)
    assert snapshot(url, TABLES) == before
