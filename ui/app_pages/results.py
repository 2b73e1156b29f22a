"""Results: responses x runs of effective scores; filter, sort, page, open one response."""

from __future__ import annotations

import csv
import io
import math

import pandas as pd
import streamlit as st

from grading.errors import RubricWorkbenchError
from storage import exports
from storage.services.results import ResultSet, ResultsFilter
from ui import grade_handoff, response_view, runtime
from ui import results_readers as readers
from ui.verdict_view import md_escape, run_label, short_run_label

SORTS = {
    "response": "Dataset order",
    "score": "Effective score",
    "spread": "Gap between runs",
    "reviewed": "Reviewed criteria",
}
REVIEWED = {"any": "All", "reviewed": "Reviewed", "not_reviewed": "Not reviewed"}
PAGE_SIZES = [25, 50, 100, 200]
ANY_RUN = 0  # run ids start at 1


def handle_filter_change() -> None:
    st.session_state.results_page = 1
    st.session_state.results_open_response = None


def handle_open_in_review(dataset_id: int, version_id: int, response_id: int) -> None:
    st.session_state.review_set = (dataset_id, version_id)
    st.session_state.review_response_id = response_id


def render_empty() -> None:
    st.info("No runs yet — go to Grade to run judges over a dataset; their scores appear here.")
    st.page_link("app_pages/grade.py", label="Go to Grade", icon=":material/play_circle:")


def pick_result_set(db: str) -> ResultSet | None:
    sets = readers.get_result_sets(db)
    if not sets:
        render_empty()
        return None
    by_key = {(s.dataset_id, s.rubric_version_id): s for s in sets}
    if st.session_state.results_set not in by_key:
        st.session_state.results_set = next(iter(by_key))
    key = st.selectbox("Results of", list(by_key), format_func=lambda k: by_key[k].label,
                       key="results_set", on_change=handle_filter_change)
    return by_key[key]


def pick_runs(db: str, result_set: ResultSet) -> tuple[int, ...]:
    by_id = {run.id: run for run in readers.get_runs(db)}
    options = [rid for rid in result_set.run_ids if rid in by_id]
    chosen = [rid for rid in st.session_state.results_run_ids if rid in options]
    if not chosen:
        chosen = options
    st.session_state.results_run_ids = chosen
    picked = st.multiselect("Runs to compare", options, key="results_run_ids",
                            format_func=lambda rid: run_label(by_id[rid]),
                            on_change=handle_filter_change)
    running = [by_id[r] for r in picked if by_id[r].status in ("queued", "running")]
    if running:
        note, refresh = st.columns([5, 1], vertical_alignment="center")
        note.caption("Still grading: " + ", ".join(f"#{r.id} ({r.graded_count}/"
                                                   f"{r.response_count})" for r in running)
                     + ". Refresh to see the grades stored since.")
        refresh.button("Refresh", icon=":material/refresh:", key="results_refresh",
                       on_click=readers.get_runs.clear, width="stretch")
    return tuple(picked)


def render_filters(db: str, run_ids: tuple[int, ...]) -> ResultsFilter:
    s = st.session_state
    by_id = {run.id: run for run in readers.get_runs(db)}
    c1, c2, c3 = st.columns([3, 2, 3])
    c1.text_input("Search id, query and output", key="results_search",
                  on_change=handle_filter_change, placeholder="words in the response")
    c2.checkbox("Judge failed or fell back", key="results_failed_only",
                on_change=handle_filter_change)
    c2.checkbox("Judges disagree", key="results_disagree_only",
                on_change=handle_filter_change,
                help="Two runs gave different verdicts on a criterion, or scores more than "
                     "0.2 apart.")
    c3.radio("Human review", list(REVIEWED), format_func=REVIEWED.get, horizontal=True,
             key="results_reviewed", on_change=handle_filter_change)
    normalized = all(by_id[r].settings.normalize for r in run_ids if r in by_id)
    low = high = None
    score_run = None
    if normalized and run_ids:
        c4, c5 = st.columns([3, 2])
        low, high = c4.slider("Effective score between", 0.0, 1.0, step=0.05,
                              key="results_score_range", on_change=handle_filter_change)
        if s.results_score_run not in (ANY_RUN, *run_ids):
            s.results_score_run = ANY_RUN
        score_run = c5.selectbox(
            "Score range applies to", [ANY_RUN, *run_ids], key="results_score_run",
            format_func=lambda r: "any selected run" if r == ANY_RUN else run_label(by_id[r]),
            on_change=handle_filter_change) or None
        if (low, high) == (0.0, 1.0):
            low = high = None  # the full range also keeps responses without a score
    return ResultsFilter(
        search=s.results_search, failed_only=s.results_failed_only,
        disagree_only=s.results_disagree_only, reviewed=s.results_reviewed,
        min_score=low, max_score=high, score_run_id=score_run)


def render_sort(run_ids: tuple[int, ...], by_id) -> tuple[str, int | None, bool, int]:
    c1, c2, c3, c4 = st.columns([2, 3, 1, 1])
    sort = c1.selectbox("Sort by", list(SORTS), format_func=SORTS.get, key="results_sort",
                        on_change=handle_filter_change)
    sort_run = None
    if sort == "score" and run_ids:
        if st.session_state.get("results_sort_run") not in run_ids:
            st.session_state.results_sort_run = run_ids[0]
        sort_run = c2.selectbox("Score of", run_ids, format_func=lambda r: run_label(by_id[r]),
                                key="results_sort_run", on_change=handle_filter_change)
    c3.toggle("Descending", key="results_descending", on_change=handle_filter_change)
    size = c4.selectbox("Per page", PAGE_SIZES, key="results_page_size",
                        on_change=handle_filter_change)
    return sort, sort_run, st.session_state.results_descending, size


def table_rows(page, by_id) -> list[dict]:
    rows = []
    for row in page.rows:
        item: dict = {"ID": row.external_id or f"#{row.response_id}"}
        for run_id, score, graded in zip(page.run_ids, row.scores, row.graded, strict=True):
            item[short_run_label(by_id[run_id])] = score if graded else None
        item["Flags"] = " ".join(flag for flag, on in (
            ("⚠ failed", row.failed), ("≠ disagree", row.disagree)) if on)
        item["Reviewed"] = (f"{row.reviewed_count}/{row.criteria_count}"
                            if row.reviewed_count else "")
        item["Query"] = row.query
        item["Output"] = row.output
        rows.append(item)
    return rows


DISAGREE_SHADE = "background-color: rgba(255, 164, 33, 0.16)"
FAILED_SHADE = "background-color: rgba(255, 43, 43, 0.10)"


def styled_table(rows: list[dict], score_columns: list[str]):
    """Rows where the judges disagree (orange) or failed (red) stand out."""
    frame = pd.DataFrame(rows)

    def shade(row) -> list[str]:
        flags = row["Flags"]
        color = DISAGREE_SHADE if "disagree" in flags else (
            FAILED_SHADE if "failed" in flags else "")
        return [color] * len(row)

    return frame.style.apply(shade, axis=1).format(
        "{:.3f}", subset=score_columns, na_rep="—")


def csv_export(db: str, result_set: ResultSet, run_ids: tuple[int, ...],
               filters: ResultsFilter, sort: str, sort_run: int | None,
               descending: bool) -> bytes:
    """Every response matching the filter (not just this page), effective and judge scores."""
    by_id = {run.id: run for run in readers.get_runs(db)}
    stamp = readers.run_stamp(db, run_ids)
    first = readers.get_results_page(db, result_set.dataset_id, result_set.rubric_version_id,
                                     run_ids, filters, sort, sort_run, descending, 0, 1, stamp)
    page = readers.get_results_page(
        db, result_set.dataset_id, result_set.rubric_version_id, run_ids, filters, sort,
        sort_run, descending, 0, max(1, first.total), stamp)
    out = io.StringIO()
    writer = csv.writer(out)
    header = ["response_id", "external_id"]
    for run_id in run_ids:
        label = f"run{run_id}_{by_id[run_id].grader}_{by_id[run_id].model}"
        header += [f"{label}_effective_score", f"{label}_judge_score", f"{label}_error"]
    writer.writerow([*header, "judge_failed", "judges_disagree", "reviewed_criteria"])
    for row in page.rows:
        cells: list = [row.response_id, row.external_id or ""]
        for score, judge, error in zip(row.scores, row.judge_scores, row.errors, strict=True):
            cells += ["" if score is None else score, "" if judge is None else judge,
                      error or ""]
        writer.writerow([*cells, row.failed, row.disagree, row.reviewed_count])
    return out.getvalue().encode("utf-8")


def export_runs(db: str, run_ids: tuple[int, ...], fmt: str) -> bytes:
    """Runs only when the button is clicked: the whole export is built then."""
    return exports.results_export(runtime.sessions_for(db), run_ids, fmt).encode("utf-8")


def render_table(db: str, result_set: ResultSet, run_ids: tuple[int, ...]) -> list:
    by_id = {run.id: run for run in readers.get_runs(db)}
    filters = render_filters(db, run_ids)
    sort, sort_run, descending, size = render_sort(run_ids, by_id)
    stamp = readers.run_stamp(db, run_ids)
    page_number = max(1, int(st.session_state.results_page))
    page = readers.get_results_page(
        db, result_set.dataset_id, result_set.rubric_version_id, run_ids, filters, sort,
        sort_run, descending, (page_number - 1) * size, size, stamp)
    pages = max(1, math.ceil(page.total / size))
    if page_number > pages:
        st.session_state.results_page = page_number = pages
        page = readers.get_results_page(
            db, result_set.dataset_id, result_set.rubric_version_id, run_ids, filters, sort,
            sort_run, descending, (page_number - 1) * size, size, stamp)

    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Responses", f"{page.dataset_total:,}")
    m2.metric("Judge failed or fell back", f"{page.failed_total:,}")
    m3.metric("Judges disagree", f"{page.disagree_total:,}")
    m4.metric("Reviewed by a person", f"{page.reviewed_total:,}")

    if not page.rows:
        st.info("No response matches these filters. Clear the search or the checkboxes.")
        return []
    score_columns = {short_run_label(by_id[r]): st.column_config.NumberColumn(
        format="%.3f", help=f"Effective score of {run_label(by_id[r])} (human verdicts "
                            "in place of the judge's)") for r in run_ids}
    st.dataframe(styled_table(table_rows(page, by_id), list(score_columns)), hide_index=True,
                 width="stretch",
                 column_config={**score_columns,
                                "Query": st.column_config.TextColumn(width="medium"),
                                "Output": st.column_config.TextColumn(width="large")})
    nav1, nav2, nav3 = st.columns([2, 3, 2])
    nav1.number_input(f"Page (of {pages})", min_value=1, max_value=pages, key="results_page")
    first_shown = page.offset + 1
    nav2.caption(f"Showing {first_shown:,}–{page.offset + len(page.rows):,} of "
                 f"{page.total:,} matching responses.")
    with nav3.popover("Export", icon=":material/download:", width="stretch"):
        stem = f"results-{result_set.dataset_name}-v{result_set.version_number}"
        st.caption("One record per response × run: judge and effective scores, and per "
                   "criterion the judge's verdict and reason, the human verdict and reviewer.")
        for fmt, mime in (("csv", "text/csv"), ("jsonl", "application/jsonl")):
            st.download_button(
                f"Results {fmt.upper()}", data=lambda fmt=fmt: export_runs(db, run_ids, fmt),
                file_name=f"{stem}.{fmt}", mime=mime, on_click="ignore",
                key=f"results_export_{fmt}", width="stretch")
        st.download_button(
            "This table (CSV)", data=lambda: csv_export(db, result_set, run_ids, filters, sort,
                                                        sort_run, descending),
            file_name=f"{stem}-table.csv", mime="text/csv", on_click="ignore",
            key="results_export_table", width="stretch",
            help="The matching responses of every page, one column per run.")
    grade_handoff.render_grade_these(db, result_set, run_ids, filters, page.total)
    return list(page.rows)


def render_detail(db: str, result_set: ResultSet, run_ids: tuple[int, ...], rows) -> None:
    labels = {row.response_id: row.external_id or f"#{row.response_id}" for row in rows}
    if st.session_state.results_open_response not in labels:
        st.session_state.results_open_response = None
    response_id = st.selectbox(
        "Open a response", list(labels), key="results_open_response", index=None,
        format_func=labels.get, placeholder="Choose a response of this page")
    if response_id is None:
        return
    detail = readers.get_response_detail(db, response_id, result_set.rubric_version_id,
                                         run_ids, readers.run_stamp(db, run_ids))
    head, review_button, history = st.columns([4, 2, 2], vertical_alignment="bottom")
    head.subheader(f"Response {labels[response_id]}")
    if review_button.button("Review this response", key="results_to_review",
                            icon=":material/rate_review:", width="stretch"):
        handle_open_in_review(result_set.dataset_id, result_set.rubric_version_id,
                              response_id)
        st.switch_page("app_pages/review.py")
    with history:
        response_view.render_history(detail)
    response_view.render_scores(detail)
    response_view.render_response_text(detail)
    st.markdown("**Per criterion**")
    response_view.render_criteria(detail)


st.title("Results")
st.caption("Effective scores of every response under each run: the judge's verdicts with "
           "the human verdicts in their place, scored by the same aggregation.")
db = runtime.database_key()
runtime.ensure_worker()  # after a restart, interrupted runs resume when results are opened
try:
    chosen = pick_result_set(db)
    if chosen is not None:
        run_ids = pick_runs(db, chosen)
        if not run_ids:
            st.info("Pick at least one run to compare.")
        else:
            page_rows = render_table(db, chosen, run_ids)
            if page_rows:
                render_detail(db, chosen, run_ids, page_rows)
except RubricWorkbenchError as exc:
    st.error(md_escape(str(exc)))
