"""Agreement: how far each judge agrees with the others and with the reviewers, at what cost.

Every number comes from storage.services.agreement (which calls grading.agreement); this page
only picks and lays out. Its parts: ui/agreement_charts.py (header, matrices, scores),
ui/agreement_criteria.py (worst criteria, disagreements), ui/agreement_judges.py (judges next
to cost), ui/agreement_baseline.py and ui/agreement_grid.py (people vs people),
ui/agreement_trust.py (how far to trust a judge), ui/agreement_labels.py (labels),
ui/agreement_pairwise.py (pairwise comparisons: the judge against people's preferences).
One section at a time, a tab each (ui.agreement_text.TABS): only the open one is read and
drawn; the tab is part of the view kept in the URL.
"""

from __future__ import annotations

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.services import blindness
from ui import (
    agreement_baseline,
    agreement_charts,
    agreement_criteria,
    agreement_judges,
    agreement_labels,
    agreement_pairwise,
    agreement_panels,
    agreement_trust,
    calibration_view,
    safe_text,
    stamp_cache,
)
from ui import agreement_readers as readers
from ui import url_state as url
from ui.agreement_text import EMPTY_HINT, TABS
from ui.auth import current_actor
from ui.runtime import database_key

# The view a link to Agreement reproduces (ui/url_state.py); the pickers drop stale values.
URL_FIELDS = (
    url.Field("data", "agreement_set", url.text, label="dataset and rubric"),
    url.Field("section", "agreement_tab", url.choice(TABS), label="section"),
    url.Field("compare", "agreement_pair", url.text, label="comparison"),
    url.Field("criterion", "agreement_criterion", url.integer(1), label="criterion"),
)
# Pickers inside one tab: kept while another tab is open (a widget not drawn in a run loses
# its value at the run's end; set again before any widget, the value stays).
KEPT_KEYS = ("agreement_pair", "agreement_criterion", "agreement_open_response",
             "agreement_trust_judge", "agreement_gold_complete", "agreement_import_create")


def render_page() -> None:
    st.title("Agreement")
    st.caption("How far each judge agrees with the others and with your reviewers, which "
               "criteria they get wrong, and what each judge costs.")
    db = database_key()
    sets = readers.get_agreement_sets(db)
    if not sets:
        pairwise = agreement_pairwise.pairwise_rows(db)
        st.info(("No graded responses to compare yet (the pairwise comparisons people "
                 "reviewed are below). " if pairwise[0] else "Nothing to compare yet. ")
                + EMPTY_HINT)
        st.page_link("app_pages/grade.py", label="Go to the Grade page",
                     icon=":material/play_arrow:")
        agreement_pairwise.render_pairwise(db, pairwise)
        return
    options = {f"{s.dataset_id}:{s.rubric_version_id}": s for s in sets}
    if st.session_state.get("agreement_set") not in options:
        if st.session_state.get("agreement_set") and url.from_url("agreement"):
            url.note("agreement", "The results of the link no longer exist: showing others.")
        st.session_state["agreement_set"] = next(iter(options))
    chosen = options[st.selectbox("Dataset × rubric version", list(options),
                                  format_func=lambda k: safe_text.text(options[k].label),
                                  key="agreement_set")]
    version_id, dataset_id = chosen.rubric_version_id, chosen.dataset_id
    for message in url.notes("agreement"):
        st.warning(safe_text.md(message))
    flash = st.session_state.agreement_flash
    if flash:
        st.success(safe_text.md(flash))
        st.session_state.agreement_flash = None
    # Blind review: a reviewer's figures and lists leave out verdicts they may not see yet.
    scope = (db, version_id, dataset_id, readers.get_stamp(db, version_id, dataset_id),
             blindness.sight_of(current_actor()))
    report = readers.get_report(*scope)
    if len(report.data.verdict_sources) < 2:
        st.info("Fewer than two sources of per-criterion verdicts: " + EMPTY_HINT)
    agreement_charts.render_header(report)
    calibration_view.render_held_out(report.data)
    # Only the open tab is drawn (and read): the page's ~12 charts and tables all at once
    # took the browser 2-3 s at 100,000 responses.
    overview, confusion, judges, baseline, trust, labels = st.tabs(
        TABS, key="agreement_tab", on_change="rerun")
    if overview.open:
        with overview:
            agreement_charts.render_matrix(report)
            agreement_criteria.render_criteria(
                report, scope, *agreement_criteria.render_pair_picker(report))
    if confusion.open:
        with confusion:
            agreement_charts.render_confusion(
                report, *agreement_criteria.render_pair_picker(report))
    if judges.open:
        with judges:
            agreement_charts.render_scores(report)
            agreement_judges.render_judges(report)
            agreement_panels.render_panels(report, db)
    if baseline.open:
        with baseline:
            agreement_baseline.render_baseline(readers.get_baseline(*scope),
                                               readers.get_baseline_grid(*scope), report)
    if trust.open:
        with trust:
            agreement_trust.render_trust(readers.get_trust(*scope))
    if labels.open:
        with labels:
            agreement_labels.render_labels(version_id, dataset_id)
            agreement_pairwise.render_pairwise(db)
    stamp_cache.trim_after_computing()


url.restore("agreement", URL_FIELDS)  # a link, a reload or coming back
for kept_key in KEPT_KEYS:
    if kept_key in st.session_state:
        st.session_state[kept_key] = st.session_state[kept_key]
try:
    render_page()
except RubricWorkbenchError as exc:
    st.error(safe_text.md(str(exc)))
url.save("agreement", URL_FIELDS)
