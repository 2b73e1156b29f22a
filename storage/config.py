"""Where the database is: ``RUBRIC_WORKBENCH_DATABASE_URL``, else a SQLite file per user."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DATABASE_URL_VARIABLE = "RUBRIC_WORKBENCH_DATABASE_URL"
DATA_DIR_VARIABLE = "RUBRIC_WORKBENCH_DATA_DIR"
DEFAULT_FILENAME = "workbench.db"


def data_dir() -> Path:
    """The per-user data directory (``RUBRIC_WORKBENCH_DATA_DIR`` overrides it)."""
    configured = os.environ.get(DATA_DIR_VARIABLE, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_data_dir("rubric-workbench", appauthor=False))


def database_url() -> str:
    """The database URL, read at call time so tests and the UI can change it."""
    configured = os.environ.get(DATABASE_URL_VARIABLE, "").strip()
    if configured:
        return configured
    return f"sqlite:///{data_dir() / DEFAULT_FILENAME}"


def describe_url(url: str) -> str:
    """The URL without its password, fit to show a user."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
