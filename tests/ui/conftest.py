"""AppTest set-up for the page tests."""

from __future__ import annotations

import gc

import pytest

from storage.config import database_url
from storage.engine import open_database


@pytest.fixture(autouse=True)
def _finalise_leftovers_before_the_page_compiles():
    """Run the finalisers of what earlier tests left behind (event loops, tasks) now, not at
    a random collection inside Streamlit's compile of a page: on Python 3.11 a finaliser that
    logs a traceback there parses source again ("AST constructor recursion depth mismatch",
    seen in CI in tests/ui/test_grade_page.py)."""
    gc.collect()


@pytest.fixture(autouse=True)
def _stop_the_apps_worker():
    """Pages (Grade, Compare) start the app's in-process worker for the test's database:
    stopped after each test, so it does not poll a removed database until the interpreter
    exits ("cannot schedule new futures after interpreter shutdown")."""
    yield
    from storage.jobs import stop_in_process_workers

    stop_in_process_workers()


@pytest.fixture
def sessions(monkeypatch):
    """The test's own database (tests/conftest.py gives each test a fresh SQLite file), with
    the app's in-process worker off: the pages read it, nothing grades behind the test's back.
    (Files that seed their own way define their own ``sessions``.)"""
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")
    factory = open_database(database_url())
    yield factory
    factory.kw["bind"].dispose()
