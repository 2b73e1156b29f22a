"""A database stamped with this version whose tables are not all there (changed by another
version of the app or by hand) is named as such, not as a server that "cannot be reached" —
on SQLite (an OperationalError) and PostgreSQL (a ProgrammingError)."""

from __future__ import annotations

import streamlit as st
from sqlalchemy import text

from grading.types import Criterion
from storage.engine import create_db_engine
from storage.services import rubrics
from tests.actors import ADMIN
from tests.ui.pages import db, open_page, texts


def test_a_table_missing_under_a_current_stamp_is_named_with_what_to_do(
        db_url, backend, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATABASE_URL", db_url)
    open_page("compare")  # the app opens the test's (migrated) database
    rubrics.create_rubric(db(), "R", [Criterion(requirement="Is complete", weight=1)],
                          actor=ADMIN)
    engine = create_db_engine(db_url)
    with engine.begin() as connection:
        if backend == "sqlite":
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        for table in ("comparison_preferences", "pair_reviews", "comparison_pairs",
                      "comparisons"):
            connection.execute(text(f"DROP TABLE {table}"
                                    + (" CASCADE" if backend == "postgresql" else "")))
    engine.dispose()

    st.cache_data.clear()  # the first visit's reads are cached for a few seconds
    at = open_page("compare")

    shown = texts(at)
    assert "has no table 'comparisons'" in shown
    assert "Restore it from a backup, or start with a new database" in shown
    assert "cannot be reached" not in shown
