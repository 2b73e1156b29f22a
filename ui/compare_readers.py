"""Cached readers of the Compare page. The comparisons list changes while one is judged, so
it is read with a short TTL; a comparison's results are keyed by its progress (status and
counts), so a new stored pair is a new cache entry."""

from __future__ import annotations

import streamlit as st

from grading.pairwise.summary import ComparisonSummary
from storage.services import (
    comparisons,
    pair_agreement,
    pair_panel_people,
    pair_panel_results,
    pair_panels,
    pair_results,
    results,
)
from storage.services.comparisons import ComparisonInfo, ComparisonResults
from storage.services.pair_agreement import CriterionPreferenceAgreement
from storage.services.pair_panel_results import PairPanelResults
from storage.services.pair_panels import PairPanelInfo
from storage.services.reviewers import Actor
from ui.runtime import sessions_for


@st.cache_data(ttl=2, max_entries=20, show_spinner=False)
def get_comparisons(db: str) -> list[ComparisonInfo]:
    return comparisons.list_comparisons(sessions_for(db))


@st.cache_data(ttl=600, max_entries=50, show_spinner=False)
def get_results(db: str, comparison_id: int, status: str, done: int,
                failed: int) -> ComparisonResults:
    """Results as of (status, done, failed): the arguments key the cache to the progress."""
    return comparisons.comparison_results(sessions_for(db), comparison_id)


@st.cache_data(ttl=600, max_entries=20, show_spinner=False)
def get_people_results(db: str, comparison_id: int, actor: Actor, stamp: tuple[int, int],
                       done: int) -> ComparisonSummary | None:
    """The summary with people's preferences as of ``stamp`` (their saves) and ``done``."""
    return pair_results.people_results(sessions_for(db), actor=actor,
                                       comparison_id=comparison_id)


@st.cache_data(ttl=600, max_entries=20, show_spinner=False)
def get_pair_agreement(db: str, comparison_id: int, actor: Actor, stamp: tuple[int, int],
                       done: int) -> list[CriterionPreferenceAgreement]:
    """Judge vs people per criterion for this viewer, as of ``stamp`` and ``done``."""
    return pair_agreement.preference_agreement(sessions_for(db), actor=actor,
                                               comparison_id=comparison_id)


@st.cache_data(ttl=600, max_entries=20, show_spinner=False)
def get_upload_columns(db: str, dataset_id: int, response_count: int) -> list[str]:
    """The columns the dataset's upload kept beside the response text."""
    return results.upload_columns(sessions_for(db), [dataset_id])


# A panel's members' progress: (comparison id, status, pairs done, pairs failed) each.
Progress = tuple[tuple[int, str, int, int], ...]


@st.cache_data(ttl=2, max_entries=20, show_spinner=False)
def get_pair_panels(db: str) -> list[PairPanelInfo]:
    return pair_panels.list_pair_panels(sessions_for(db))


@st.cache_data(ttl=600, max_entries=50, show_spinner=False)
def get_panel_results(db: str, panel_id: int, progress: Progress) -> PairPanelResults:
    """The panel's results as of its members' ``progress``."""
    return pair_panel_results.pair_panel_results(sessions_for(db), panel_id)


@st.cache_data(ttl=600, max_entries=20, show_spinner=False)
def get_panel_people(db: str, panel_id: int, actor: Actor, stamp: tuple
                     ) -> tuple[ComparisonSummary | None, list[CriterionPreferenceAgreement]]:
    """The panel's summary with people's preferences and judge-vs-people per criterion for
    this viewer, as of ``stamp`` (its members' progress and people's saves on them)."""
    sessions = sessions_for(db)
    return (pair_panel_people.panel_people_results(sessions, actor=actor, panel_id=panel_id),
            pair_panel_people.panel_preference_agreement(sessions, actor=actor,
                                                         panel_id=panel_id))


def clear() -> None:
    get_comparisons.clear()
    get_results.clear()
    get_people_results.clear()
    get_pair_agreement.clear()
    get_pair_panels.clear()
    get_panel_results.clear()
    get_panel_people.clear()
