"""Set-up shared by the Grade page's AppTests that launch runs and grade them in the test
itself (over litellm's HTTP path against the fake provider)."""

from __future__ import annotations

import pytest

from storage.config import database_url
from storage.engine import SessionFactory, open_database
from tests.storage.helpers import make_dataset, make_rubric


@pytest.fixture(autouse=True)
def runs_graded_by_the_test(monkeypatch):
    """No in-process worker (the test runs the runs), and a key for the fake provider.
    Autouse in every module that imports it."""
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")


def seeded_sessions(responses: int) -> SessionFactory:
    """The test's database with the sample rubric and ``responses`` responses."""
    sessions = open_database(database_url())
    make_rubric(sessions)
    make_dataset(sessions, count=responses)
    return sessions
