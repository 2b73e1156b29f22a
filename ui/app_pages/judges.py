"""Judges: make judges better from people's corrections — panels of judges, and a criterion's
wording tried on the responses people reviewed before it is adopted."""

from __future__ import annotations

import streamlit as st

from ui import results_readers as readers
from ui.boundary import page_boundary
from ui.panel_view import render_panels
from ui.runtime import database_key
from ui.trial_view import render_trials

st.title("Judges")
st.caption("Combine judges into a panel, and try a criterion's new wording on the responses "
           "people reviewed — before it becomes a new rubric version.")

with page_boundary(lambda: st.session_state.pop("judges_set", None)):
    db = database_key()
    sets = readers.get_result_sets(db)
    if not sets:
        st.info("Nothing graded yet: grade a dataset on the Grade page first.")
        st.stop()
    keys = {f"{s.dataset_id}:{s.rubric_version_id}": s for s in sets}
    if st.session_state.get("judges_set") not in keys:
        st.session_state["judges_set"] = next(iter(keys))
    chosen = st.selectbox("Dataset × rubric version", list(keys), key="judges_set",
                          format_func=lambda k: keys[k].label)
    result_set = keys[chosen]
    by_id = {run.id: run for run in readers.get_runs(db)}
    set_runs = [by_id[run_id] for run_id in sorted(result_set.run_ids) if run_id in by_id]
    criteria = list(readers.get_version(db, result_set.rubric_version_id).criteria)
    # Agreement's "Reword" links open the wording tab, criterion chosen.
    panels_tab, wording_tab = st.tabs(["Judge panels", "Try a new wording"],
                                      default=st.session_state.judges_tab)
    st.session_state.judges_tab = None
    with panels_tab:
        render_panels(result_set, set_runs)
    with wording_tab:
        render_trials(criteria, set_runs)
