"""Migration 0018 (pairwise runs): a database at 0017 with rubrics, responses, runs, grades
and reviewers' verdicts moves to head with every row as it was, gains the three comparison
tables (which then take a comparison), and goes back down without them, rows still kept."""

from __future__ import annotations

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from storage.engine import open_database
from storage.services import comparisons
from storage.services.comparisons import Source
from tests.actors import ADMIN
from tests.storage.migration_rows import snapshot, table_names
from tests.storage.test_criterion_kinds_migration import _migrate, _seed_0014

TABLES = ("rubrics", "rubric_versions", "criteria", "datasets", "responses", "grading_runs",
          "grades", "grade_criteria", "human_verdicts")
NEW = {"comparisons", "comparison_pairs", "comparison_preferences"}


def test_upgrade_keeps_every_row_and_adds_comparisons_and_downgrade_removes_them(
        backend, new_database):
    url = new_database(backend)
    _migrate(url, "0014_trial_status")
    _seed_0014(url)
    _migrate(url, "0017_run_samples")
    before = snapshot(url, TABLES)
    assert before["grades"] and before["human_verdicts"] and before["responses"]
    assert not NEW & table_names(url)

    _migrate(url, "0018_pairwise_runs")
    assert snapshot(url, TABLES) == before
    assert table_names(url) >= NEW
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as c:  # a second source to compare the seeded response with
        c.execute(text("INSERT INTO datasets (id, name, description, archived, created_at) "
                       "SELECT 2, 'Other', '', archived, created_at FROM datasets WHERE id = 1"))
        c.execute(text("INSERT INTO responses (dataset_id, external_id, query, output, "
                       "metadata, created_at) SELECT 2, external_id, query, output || ' more', "
                       "metadata, created_at FROM responses WHERE dataset_id = 1"))
    engine.dispose()
    sessions = open_database(url)
    made = comparisons.create_comparison(sessions, rubric_version_id=1, a=Source(1),
                                         b=Source(2), model="openai/j", actor=ADMIN)
    assert made.pair_count == len(before["responses"])
    sessions.kw["bind"].dispose()

    _migrate(url, "0017_run_samples", down=True)
    assert not NEW & table_names(url)
    after = snapshot(url, TABLES)
    assert {t: after[t] for t in TABLES if t not in ("datasets", "responses")} == {
        t: before[t] for t in TABLES if t not in ("datasets", "responses")}
    assert after["responses"][:len(before["responses"])] == before["responses"]
