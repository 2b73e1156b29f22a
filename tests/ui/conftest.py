"""AppTest set-up for the page tests."""

from __future__ import annotations

import gc

import pytest


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
