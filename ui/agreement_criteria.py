"""Agreement page, per criterion: the worst criteria of a pair of sources (or all), the
examples where they disagree, and the ways out to Results and Review."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.services.agreement import HUMAN, AgreementReport
from ui import agreement_readers as readers
from ui import safe_text, url_state
from ui.agreement_text import (
    ALL_SOURCES,
    alpha_name,
    fmt,
    fmt_pct,
    kappa_name,
    short,
    verdict_text,
)


def _pair_options(report: AgreementReport) -> dict[str, str]:
    options = {ALL_SOURCES: "All sources (Krippendorff's α)"}
    labels_by_key = {s.key: s.label for s in report.data.sources}
    for a, b in report.pairwise:
        options[f"{a}|{b}"] = safe_text.text(f"{labels_by_key[a]}  vs  {labels_by_key[b]}")
    return options


def render_pair_picker(report: AgreementReport) -> tuple[str | None, str | None]:
    """The two sources the criteria and confusion matrices compare (None, None: all)."""
    options = _pair_options(report)
    default = next((k for k in options if k.startswith(f"{HUMAN}|")), next(iter(options)))
    if st.session_state.get("agreement_pair") not in options:
        st.session_state["agreement_pair"] = default
    choice = st.selectbox("Compare", list(options), format_func=options.get,
                          key="agreement_pair")
    a, b = choice.split("|") if choice != ALL_SOURCES else (None, None)
    return a, b


def render_criteria(report: AgreementReport, scope: tuple, a: str | None,
                    b: str | None) -> None:
    """``scope`` is (db, rubric version id, dataset id, stamp, sight): the cached readers'
    key; ``a``, ``b``: the compared sources (``render_pair_picker``)."""
    st.subheader("Per criterion, worst first")
    rows = readers.get_criterion_table(*scope, a, b)
    table = []
    for row in rows:
        entry = {"Criterion": safe_text.text(row.criterion.label),
                 "Weight": row.criterion.weight,
                 "Requirement": safe_text.text(row.criterion.requirement)}
        if row.pair is not None:
            p = row.pair
            entry |= {"Metric": kappa_name(p), "κ": fmt(p.cohens_kappa),
                      "Agreement": fmt_pct(p.percent_agreement),
                      "Balanced F1": fmt(p.balanced_f1), "Pairs used": p.pairs_used,
                      "CANNOT_ASSESS excluded": p.excluded_cannot_assess,
                      "Disagreements": row.disagreements, "Note": p.note}
        else:
            entry |= {"Metric": alpha_name(row.alpha), "α": fmt(row.alpha.alpha),
                      "Units": row.alpha.pairable_units,
                      "CANNOT_ASSESS excluded": row.alpha.excluded_cannot_assess,
                      "Disagreements": row.disagreements, "Note": row.alpha.note}
        table.append(entry)
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")
    keys = (a, b) if a and b else tuple(s.key for s in report.data.verdict_sources)
    render_reword_links(report, rows, keys)
    render_disagreements(report, scope, rows, keys)


REWORD_LINKS = 3


def render_reword_links(report: AgreementReport, rows, keys: tuple[str, ...]) -> None:
    """The worst criteria lead to the Judges page's rewording trial, criterion chosen."""
    data = report.data
    judges = [data.source(k) for k in keys if not data.source(k).is_human]
    runs = [rid for src in judges for rid in
            ([src.run_id] if src.run_id is not None else list(src.member_run_ids))]
    worst = [r for r in rows if r.disagreements][:REWORD_LINKS]
    if not worst or not runs or not any(s.is_human for s in data.sources):
        return
    st.caption("Reword a criterion the judges get wrong, and try it on the reviewed "
               "responses before adopting it:")
    # each button as wide as its label, wrapping to the next line: never a cut criterion name
    row = st.container(horizontal=True, gap="small")
    for found in worst:
        if row.button(f"Reword “{safe_text.text(found.criterion.label)}”",
                      key=f"agreement_reword_{found.criterion.id}",
                      icon=":material/edit_note:", width="content"):
            handle_reword(data.dataset_id, data.rubric_version_id, found.criterion.id,
                          runs[0])
            st.switch_page("app_pages/judges.py")


def handle_reword(dataset_id: int, version_id: int, criterion_id: int, run_id: int) -> None:
    """Open the Judges page on the wording trial of this criterion, with this run judging."""
    s = st.session_state
    s["judges_set"] = f"{dataset_id}:{version_id}"
    s["judges_criterion_id"] = criterion_id
    s["judges_trial_run"] = run_id
    s.judges_tab = "Try a new wording"


LISTED = 500  # the examples listed of a criterion: the first so many, by response


def render_disagreements(
    report: AgreementReport, scope: tuple, rows, keys: tuple[str, ...]
) -> None:
    with_examples = [r for r in rows if r.disagreements]
    if not with_examples:
        st.caption("No disagreements between these sources.")
        return
    names = {r.criterion.id: safe_text.text(f"{r.criterion.label} ({r.disagreements})")
             for r in with_examples}
    if st.session_state.get("agreement_criterion") not in names:
        st.session_state["agreement_criterion"] = with_examples[0].criterion.id
    criterion_id = st.selectbox("Examples where they disagree", list(names),
                                format_func=names.get, key="agreement_criterion")
    found = readers.get_disagreements(*scope, keys, criterion_id, LISTED)
    total = next(r.disagreements for r in with_examples if r.criterion.id == criterion_id)
    if total > len(found):
        # thousands of rows help nobody on this page, and cost seconds to read and send
        st.caption(f"The first {len(found):,} of {total:,} responses where they disagree, "
                   "in the dataset's order. **Open in Results** shows any of them; its "
                   "**Judges disagree** filter lists every one where judges differ.")
    labels_by_key = {s.key: short(s) for s in report.data.sources}
    frame = pd.DataFrame([
        {"Response": safe_text.text(d.response_label),
         **{f"{labels_by_key[k]}": verdict_text(v) for k, v in d.verdicts.items()},
         **{f"Why ({labels_by_key[k]})": safe_text.text(d.reasons[k]) for k in keys}}
        for d in found
    ])
    st.dataframe(frame, hide_index=True, width="stretch")
    options = {d.response_id: safe_text.text(d.response_label) for d in found}
    if st.session_state.get("agreement_open_response") not in options:
        st.session_state["agreement_open_response"] = next(iter(options))
    pick, results_col, review_col = st.columns([2, 1, 1], vertical_alignment="bottom")
    response_id = pick.selectbox("Response", list(options), format_func=options.get,
                                 key="agreement_open_response")
    compared = [report.data.source(k) for k in keys]
    run_ids = tuple(dict.fromkeys(
        [src.run_id for src in compared if src.run_id is not None]
        + [rid for src in compared for rid in src.member_run_ids]))
    panel_ids = [src.panel_id for src in compared if src.is_panel]
    if results_col.button("Open in Results", icon=":material/table_view:"):
        handle_open_in_results(report, run_ids, response_id)
        st.session_state.results_panel_ids = panel_ids
        st.switch_page("app_pages/results.py")
    if review_col.button("Review it", icon=":material/rate_review:"):
        handle_open_in_review(report, response_id)
        st.switch_page("app_pages/review.py")


def handle_open_in_results(report: AgreementReport, run_ids: tuple[int, ...],
                           response_id: int) -> None:
    """Show this response on the Results page, with the compared runs side by side."""
    data, s = report.data, st.session_state
    url_state.forget("results")  # show these runs, not the view Results was left with
    s.results_set = (data.dataset_id, data.rubric_version_id)
    s.results_run_ids = list(run_ids) or [src.run_id for src in data.sources
                                          if src.run_id is not None]
    s.results_search = data.response_labels[response_id]
    s.results_failed_only = s.results_disagree_only = False
    s.results_reviewed = "any"
    s.results_page = 1
    s.results_meta_column, s.results_verdict_criterion = "", None
    s.results_open_response = response_id
    s.results_dialog_pending = True  # the Results page opens it


def handle_open_in_review(report: AgreementReport, response_id: int) -> None:
    s = st.session_state
    s.review_set = (report.data.dataset_id, report.data.rubric_version_id)
    s.review_response_id = response_id
