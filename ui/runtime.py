"""Long-lived resources of the app process: the database sessions and the in-process worker."""

from __future__ import annotations

import os

import streamlit as st

from storage.config import database_url
from storage.engine import SessionFactory, open_database

# Tests that only check what the pages write set this to 0 so that no run starts grading.
WORKER_VARIABLE = "RUBRIC_WORKBENCH_IN_PROCESS_WORKER"


@st.cache_resource(show_spinner="Opening the database…")
def _sessions_for(url: str) -> SessionFactory:
    return open_database(url)


def database_key() -> str:
    """The configured database URL: the first argument of every cached reader."""
    return database_url()


def sessions_for(url: str) -> SessionFactory:
    return _sessions_for(url)


def get_sessions() -> SessionFactory:
    """Sessions for the configured database, migrated to head on first use in this process."""
    return _sessions_for(database_url())


@st.cache_resource(show_spinner=False)
def _worker_for(url: str) -> object | None:
    try:
        from storage.jobs import start_in_process_worker
    except ImportError:  # the job runner is not installed in this build
        return None
    _sessions_for(url)  # migrated before the worker touches the tables
    return start_in_process_worker(url)


def worker_enabled() -> bool:
    """False when tests (or an operator) turned this process's background work off."""
    return os.environ.get(WORKER_VARIABLE, "1").strip().lower() not in ("0", "false", "no",
                                                                          "off")


def ensure_worker() -> bool:
    """Start the app process's grading worker once (per database); False if disabled."""
    if os.environ.get(WORKER_VARIABLE, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return _worker_for(database_url()) is not None
