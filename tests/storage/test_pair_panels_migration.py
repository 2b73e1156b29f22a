"""Migration 0024 (panels of pairwise judges): a database at 0021 with comparisons moves up
with every row as it was, gains pair_panels and pair_panel_members (which then hold a panel),
and goes back down without them, every other row kept."""

from __future__ import annotations

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from storage.engine import open_database
from tests.storage.migration_rows import snapshot, table_names
from tests.storage.pair_panel_fixtures import judged, sources
from tests.storage.test_criterion_kinds_migration import _migrate

TABLES = ("rubrics", "criteria", "datasets", "responses", "comparisons", "comparison_pairs",
          "comparison_preferences", "pair_reviews", "audit_events")
NEW = {"pair_panels", "pair_panel_members"}


def test_upgrade_keeps_every_row_adds_the_panel_tables_and_downgrade_removes_them(
        backend, new_database):
    url = new_database(backend)
    sessions = open_database(url)  # opening migrates to head
    src = sources(sessions)
    one = judged(sessions, src, "openai/one", [[("A", True), ("B", True)]] * 4)
    two = judged(sessions, src, "openai/two", [[("B", True), ("B", False)]] * 4)
    sessions.kw["bind"].dispose()
    _migrate(url, "0021_pair_reviews", down=True)
    assert not NEW & table_names(url)
    before = snapshot(url, TABLES)
    assert before["comparison_preferences"]

    _migrate(url, "0024_pair_panels")
    assert snapshot(url, TABLES) == before
    assert table_names(url) >= NEW
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as c:
        c.execute(text("INSERT INTO pair_panels (id, name, rubric_version_id, rule, created_by, "
                       "created_at) VALUES (1, '', :v, 'majority', 'ann', CURRENT_TIMESTAMP)"),
                  {"v": src.version_id})
        for n, cid in enumerate((one, two)):
            c.execute(text("INSERT INTO pair_panel_members (panel_id, comparison_id, position) "
                           "VALUES (1, :c, :n)"), {"c": cid, "n": n})
        assert c.scalar(text("SELECT count(*) FROM pair_panel_members")) == 2
    engine.dispose()

    _migrate(url, "0021_pair_reviews", down=True)
    assert not NEW & table_names(url)
    assert snapshot(url, TABLES) == before
