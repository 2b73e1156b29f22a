"""Cached readers of the Compare page. The comparisons list changes while one is judged, so
it is read with a short TTL; a comparison's results are keyed by its progress (status and
counts), so a new stored pair is a new cache entry."""

from __future__ import annotations

import streamlit as st

from storage.services import comparisons
from storage.services.comparisons import ComparisonInfo, ComparisonResults
from ui.runtime import sessions_for


@st.cache_data(ttl=2, max_entries=20, show_spinner=False)
def get_comparisons(db: str) -> list[ComparisonInfo]:
    return comparisons.list_comparisons(sessions_for(db))


@st.cache_data(ttl=600, max_entries=50, show_spinner=False)
def get_results(db: str, comparison_id: int, status: str, done: int,
                failed: int) -> ComparisonResults:
    """Results as of (status, done, failed): the arguments key the cache to the progress."""
    return comparisons.comparison_results(sessions_for(db), comparison_id)


def clear() -> None:
    get_comparisons.clear()
    get_results.clear()
