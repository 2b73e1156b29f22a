"""Cached readers of judge panels, for the Judges, Results, Review and Agreement pages.

A panel's grades are computed from its members' on every read (storage.services.panels), so
a page must not recompute them on each rerun: readers are keyed by a ``stamp`` (the members'
graded counts and statuses and the newest human verdict, read at most every 2 s), the way
ui/results_readers.py keys the Results table.
"""

from __future__ import annotations

import streamlit as st

from storage.services import (
    blindness,
    member_alpha_store,
    panel_agreement,
    panel_results,
    panels,
    trials,
)
from storage.services.blindness import Sight
from ui.runtime import sessions_for


@st.cache_data(ttl=30, max_entries=50, show_spinner=False)
def get_panels(db: str, dataset_id: int, rubric_version_id: int) -> list[panels.PanelInfo]:
    return panels.list_panels(sessions_for(db), dataset_id=dataset_id,
                              rubric_version_id=rubric_version_id)


@st.cache_data(ttl=2, max_entries=50, show_spinner=False)
def get_stamp(db: str, panel_ids: tuple[int, ...]) -> tuple:
    """New member grades and new verdicts from anyone show within 2 s."""
    return panel_results.panel_stamp(sessions_for(db), panel_ids)


@st.cache_data(ttl=2, max_entries=50, show_spinner=False)
def get_member_stamp(db: str, panel_ids: tuple[int, ...]) -> tuple:
    """``panel_results.member_stamp`` of ``get_stamp``, read alone (no count of the
    dataset's responses), for a page that shows only the members' alpha."""
    return panel_results.current_member_stamp(sessions_for(db), panel_ids)


@st.cache_data(ttl=600, max_entries=100, show_spinner="Combining the panel's verdicts…")
def get_panel_results(db: str, panel_id: int, response_ids: tuple[int, ...] | None,
                      stamp: tuple, sight: Sight = blindness.EVERYTHING,
                      ) -> dict[int, panel_results.PanelResult]:
    """Response id -> the panel's result (every graded response when ``response_ids`` is
    None), with the human verdicts ``sight`` may see."""
    found = panel_results.panel_results(
        sessions_for(db), panel_id, None if response_ids is None else list(response_ids),
        sight=sight)
    return {r.response_id: r for r in found}


@st.cache_data(ttl=600, max_entries=20, show_spinner="Combining the panels' verdicts…")
def get_panel_columns(db: str, dataset_id: int, rubric_version_id: int,
                      panel_ids: tuple[int, ...], stamp: tuple,
                      sight: Sight = blindness.EVERYTHING) -> tuple:
    """The panels as columns of the Results table as ``sight`` may see them, until
    ``stamp`` moves: the figures the stored tables do not hold (``page_columns``)."""
    return panel_results.page_columns(sessions_for(db), dataset_id=dataset_id,
                                       rubric_version_id=rubric_version_id,
                                       panel_ids=panel_ids, sight=sight)


@st.cache_data(ttl=600, max_entries=50, show_spinner=False)
def get_unsettled(db: str, panel_ids: tuple[int, ...], stamp: tuple) -> bool:
    """Whether one of these panels has responses whose stored decision is not the one
    read (the Results page then reads it in Python), until ``stamp`` moves."""
    return panel_results.any_unsettled(sessions_for(db), panel_ids)


@st.cache_data(ttl=600, max_entries=50, show_spinner=False)
def get_member_agreement(db: str, panel_id: int,
                         stamp: tuple) -> list[panel_agreement.MemberAgreement]:
    """The members' alpha until ``stamp`` moves: ``panel_results.member_stamp`` (a
    person's verdict does not recompute it). Read from the database when computed there at
    this stamp (storage.services.member_alpha_store: a new process does not compute it)."""
    return member_alpha_store.kept_member_agreement(sessions_for(db), panel_id, stamp)


@st.cache_data(ttl=600, max_entries=200, show_spinner="Estimating…")
def get_trial_plan(db: str, base_run_id: int, criterion_id: int, requirement: str,
                   stamp: tuple) -> trials.TrialPlan:
    """What a trial would judge and cost; ``stamp`` changes with a new human verdict."""
    return trials.plan_trial(sessions_for(db), base_run_id=base_run_id,
                             criterion_id=criterion_id, requirement=requirement)


def clear_after_panel_change() -> None:
    """A panel made or removed: the lists and stamps that name panels."""
    get_panels.clear()
    get_stamp.clear()


@st.cache_data(ttl=600, max_entries=50, show_spinner=False)
def get_trial(db: str, trial_id: int, stamp: tuple) -> trials.TrialResult:
    """A stored trial's figures (bootstrap intervals included), recomputed only when the
    human verdicts change (``stamp``)."""
    return trials.get_trial(sessions_for(db), trial_id)
