"""A database stamped with this version whose tables are not all there (changed by another
version of the app or by hand) is named as such, not as a server that "cannot be reached"."""

from __future__ import annotations

import sqlite3

import streamlit as st

from grading.types import Criterion
from storage.config import database_url
from storage.services import rubrics
from tests.actors import ADMIN
from tests.ui.pages import db, open_page, texts


def test_a_table_missing_under_a_current_stamp_is_named_with_what_to_do():
    open_page("compare")  # the app creates and upgrades the test's database
    rubrics.create_rubric(db(), "R", [Criterion(requirement="Is complete", weight=1)],
                          actor=ADMIN)
    path = database_url().removeprefix("sqlite:///")
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA foreign_keys=OFF")
        for table in ("comparison_preferences", "pair_reviews", "comparison_pairs",
                      "comparisons"):
            raw.execute(f"DROP TABLE {table}")

    st.cache_data.clear()  # the first visit's reads are cached for a few seconds
    at = open_page("compare")

    shown = texts(at)
    assert "has no table 'comparisons'" in shown
    assert "Restore it from a backup, or start with a new database" in shown
    assert "cannot be reached" not in shown
