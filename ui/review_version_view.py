"""Review: the notice under the save buttons when the rubric has a newer version than the one
the page shows (e.g. a wording was adopted while the reviewer was grading), with a way to
switch to it. The save itself stays on the version shown (storage.services.review_version)."""

from __future__ import annotations

import streamlit as st

from storage.services import results
from storage.services.review_version import NewerVersion
from ui import results_readers as readers
from ui import runtime
from ui.verdict_view import md_escape


def remember(newer: NewerVersion | None) -> None:
    """Keep the last save's notice (or drop it: the save was on the newest version)."""
    st.session_state.review_version_notice = None if newer is None else (
        newer.saved_version_id, newer.newer_version_id, newer.newer_number, newer.message)


def handle_switch(dataset_id: int, version_id: int) -> None:
    s = st.session_state
    readers.get_result_sets.clear()  # the newer version's set may be newer than the cache
    s.review_set = (dataset_id, version_id)
    s.review_position = 0
    s.review_version_notice = None
    s.review_version_switched = True


def render_notice() -> None:
    """The notice stays while the page still shows the older version."""
    s = st.session_state
    if s.review_version_switched:  # pressed inside the review fragment: redraw the page
        s.review_version_switched = False
        st.rerun()
    notice, chosen = s.review_version_notice, s.review_set
    if notice is None or chosen is None:
        return
    shown_id, newer_id, newer_number, message = notice
    if chosen[1] != shown_id:  # the reviewer picked another set since
        s.review_version_notice = None
        return
    st.warning(md_escape(message), icon=":material/update:")
    target = (chosen[0], newer_id)
    # read fresh (not the cached list): the newer version's runs may have started since
    sets = {(r.dataset_id, r.rubric_version_id) for r in
            results.list_result_sets(runtime.get_sessions())}
    if target in sets:
        st.button(f"Switch to v{newer_number}", key="review_version_switch",
                  on_click=handle_switch, args=target, icon=":material/swap_horiz:")
    else:
        st.caption(f"No run has graded this dataset under v{newer_number} yet: grade it "
                   f"under v{newer_number} on the Grade page to review it there.")
