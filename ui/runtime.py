"""Long-lived resources of the app process: the database sessions (and, later, the worker)."""

from __future__ import annotations

import streamlit as st

from storage.config import database_url
from storage.engine import SessionFactory, open_database


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
