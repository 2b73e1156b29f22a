"""Cached readers of rubrics, versions, datasets and responses, and what to clear after a write.

Every reader takes the database URL as its first argument, so caches never mix databases
(tests point each run at its own file). Pages call them with ``ui.runtime.database_key()``.
"""

from __future__ import annotations

import streamlit as st

from storage.dto import DatasetInfo, ResponseInfo, RubricInfo, RubricVersionInfo
from storage.services import datasets, rubrics
from storage.services.rubric_diff import VersionDiff, diff_versions
from ui import results_readers
from ui.runtime import sessions_for

TTL = 60  # seconds; writes made in the app clear the readers at once, other writers show up later


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def get_rubrics(url: str, include_archived: bool) -> list[RubricInfo]:
    return rubrics.list_rubrics(sessions_for(url), include_archived=include_archived)


@st.cache_data(ttl=TTL, max_entries=256, show_spinner=False)
def get_versions(url: str, rubric_id: int) -> list[RubricVersionInfo]:
    return rubrics.list_versions(sessions_for(url), rubric_id)


@st.cache_data(ttl=TTL, max_entries=256, show_spinner=False)
def get_export(url: str, version_id: int, fmt: str) -> str:
    fmt_ = "json" if fmt == "json" else "yaml"
    return rubrics.export_version(sessions_for(url), version_id, fmt_)


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def get_diff(url: str, old_version_id: int, new_version_id: int) -> VersionDiff:
    return diff_versions(sessions_for(url), old_version_id, new_version_id)


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def get_datasets(url: str, include_archived: bool) -> list[DatasetInfo]:
    return datasets.list_datasets(sessions_for(url), include_archived=include_archived)


@st.cache_data(ttl=TTL, max_entries=128, show_spinner=False)
def get_response_page(url: str, dataset_id: int, offset: int, limit: int) -> list[ResponseInfo]:
    return datasets.list_responses(sessions_for(url), dataset_id, offset=offset, limit=limit)


def clear_rubric_readers() -> None:
    """After any rubric write: lists, versions, exports and diffs may all have changed,
    here and in the Grade page's pickers (a new rubric must be gradable at once)."""
    get_rubrics.clear()
    get_versions.clear()
    get_export.clear()
    get_diff.clear()
    results_readers.get_rubric_list.clear()
    results_readers.get_versions.clear()


def clear_dataset_list() -> None:
    """After creating, renaming or archiving a dataset (its responses did not change)."""
    get_datasets.clear()
    results_readers.get_dataset_list.clear()


def clear_dataset_readers() -> None:
    """After adding responses: counts, pages and the Grade page's response pickers change."""
    clear_dataset_list()
    get_response_page.clear()
    results_readers.get_response_labels.clear()
