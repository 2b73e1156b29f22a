"""Jobs tests: the storage database fixtures (SQLite file and real PostgreSQL) and the fake
OpenAI-compatible provider, which litellm reaches over real HTTP on 127.0.0.1."""

from __future__ import annotations

import pytest

from storage.jobs import limiter as limiter_module
from tests.fake_provider import fake_provider, fake_provider_server
from tests.storage.conftest import (
    _postgres,
    _templates,
    backend,
    db_url,
    new_database,
    sessions,
)

__all__ = [
    "_postgres", "_templates", "backend", "db_url", "fake_provider", "fake_provider_server",
    "new_database", "sessions",
]
API_KEY = "test-key"


@pytest.fixture(autouse=True)
def _job_environment(monkeypatch):
    """A key for the fake provider; a fresh limiter registry per test (limiters are global)."""
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", API_KEY)
    limiter_module._registry.clear()
    yield
    limiter_module._registry.clear()
