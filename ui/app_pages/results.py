"""Results: responses x runs of effective scores; filter, sort, page, open one response."""

from __future__ import annotations

import math

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage import exports, table_export
from storage.errors import InvalidInputError
from storage.export_names import file_stem
from storage.services import blindness
from storage.services.results import ResultSet, ResultsFilter, ResultsPage
from ui import grade_handoff, response_view, results_filters, results_table, runtime, safe_text
from ui import results_panels as panel_columns
from ui import results_readers as readers
from ui import url_state as url
from ui.auth import current_actor
from ui.verdict_view import md_escape, run_label

PAGE_SIZES = results_filters.PAGE_SIZES
DISTRIBUTION_BINS = 20


def handle_open_in_review(dataset_id: int, version_id: int, response_id: int) -> None:
    st.session_state.review_set = (dataset_id, version_id)
    st.session_state.review_response_id = response_id
    st.session_state.results_goto_review = True  # switched on the next run (not in a callback)


def handle_row_selected(table_key: str, response_ids: list[int]) -> None:
    """A click on a row opens that response; the table forgets the selection so the next
    click (even on the same row) opens again."""
    s = st.session_state
    selection = s[table_key].selection
    rows = list(selection.rows) or [cell[0] for cell in selection.cells]
    if rows and rows[0] < len(response_ids):
        s.results_open_response = response_ids[rows[0]]
        s.results_dialog_pending = True
    s.results_table_nonce += 1


def render_empty() -> None:
    st.info("No runs yet — go to Grade to run judges over a dataset; their scores appear here.")
    st.page_link("app_pages/grade.py", label="Go to Grade", icon=":material/play_circle:")


def pick_result_set(db: str, where) -> ResultSet | None:
    sets = readers.get_result_sets(db)
    if not sets:
        render_empty()
        return None
    by_key = {(s.dataset_id, s.rubric_version_id): s for s in sets}
    if st.session_state.results_set not in by_key:
        if st.session_state.results_set is not None and url.from_url("results"):
            url.note("results", "The results of the link no longer exist: showing others.")
        st.session_state.results_set = next(iter(by_key))
    key = where.selectbox("Results of", list(by_key),
                       format_func=lambda k: safe_text.text(by_key[k].label),
                       key="results_set", on_change=results_filters.handle_filter_change)
    return by_key[key]


def pick_runs(db: str, result_set: ResultSet, where) -> tuple[int, ...]:
    by_id = {run.id: run for run in readers.get_runs(db)}
    options = [rid for rid in result_set.run_ids if rid in by_id]
    chosen = [rid for rid in st.session_state.results_run_ids if rid in options]
    gone = [rid for rid in st.session_state.results_run_ids if rid not in options]
    if gone and url.from_url("results"):
        url.note("results", "Run " + ", ".join(f"#{r}" for r in gone) + " of the link "
                 "no longer exists here: left out.")
    if not chosen:
        chosen = options
    st.session_state.results_run_ids = chosen
    picked = where.multiselect("Runs to compare", options, key="results_run_ids",
                            format_func=lambda rid: safe_text.text(run_label(by_id[rid])),
                            on_change=results_filters.handle_filter_change)
    running = tuple(r for r in picked if by_id[r].status in ("queued", "running"))
    if running:
        with where:
            render_still_grading(db, running)
    for run in (by_id[r] for r in picked if by_id[r].stopped_by_cost_cap):
        where.warning(md_escape(
            f"Run #{run.id} stopped at its cost cap after grading {run.graded_count:,} of "
            f"{run.response_count:,} responses: the others have no score from it. "
            f"({run.error})"))
    return tuple(picked)


@st.fragment(run_every=2.0)
def render_still_grading(db: str, drawn: tuple[int, ...]) -> None:
    """Live counts of the runs still grading; when one of them ends, the page is drawn
    again (its table and figures were of the grades stored until then)."""
    readers.get_runs.clear()  # the fragment is the poll: always read fresh totals
    by_id = {run.id: run for run in readers.get_runs(db)}
    running = [by_id[r] for r in drawn if r in by_id and by_id[r].status in ("queued",
                                                                          "running")]
    if len(running) != len(drawn):
        st.rerun()
    note, refresh = st.columns([3, 1], vertical_alignment="center")
    note.caption("Still grading: " + ", ".join(f"#{r.id} ({r.graded_count}/"
                                               f"{r.response_count})" for r in running)
                 + ". Refresh to see the grades stored since; the page redraws by itself "
                   "when they finish.")
    if refresh.button("Refresh", icon=":material/refresh:", key="results_refresh",
                      width="stretch"):
        st.rerun()  # the whole page: its table, not only this note


def csv_export(db: str, result_set: ResultSet, run_ids: tuple[int, ...],
               filters: ResultsFilter, sort: str, sort_run: int | None,
               descending: bool, score_gap: float, panel_ids: tuple[int, ...] = (),
               sort_panel: int | None = None) -> bytes:
    """Every response matching the filter (not just this page), effective and judge scores:
    written a page at a time to a temporary file (see ``export_runs``)."""
    by_id = {run.id: run for run in readers.get_runs(db)}
    sight = blindness.sight_of(current_actor())
    panel_query = panel_columns.query(db, panel_ids, sort_panel, sight)
    read_page = readers.table_reader(
        db, result_set.dataset_id, result_set.rubric_version_id, run_ids, filters, sort,
        sort_run, descending, readers.run_stamp(db, run_ids), score_gap, **panel_query)
    with table_export.table_csv_file(runtime.sessions_for(db), read_page,
                                     [by_id[r] for r in run_ids], panel_ids,
                                     sight=sight) as found:
        return found.read()


def export_runs(db: str, run_ids: tuple[int, ...], fmt: str,
                panel_ids: tuple[int, ...] = ()) -> bytes:
    """Runs only when the button is clicked: the export is written a page at a time to a
    temporary file, whose bytes the button then holds. Streamlit 1.67 keeps any download
    as one bytes object in its media store (it reads a file it is given whole, never a
    stream), so reading it here costs the same and closes the file at once; what is saved
    is the whole export built as a string too (two or three more copies)."""
    with exports.results_export_file(runtime.sessions_for(db), run_ids, fmt, panel_ids,
                                     sight=blindness.sight_of(current_actor())) as found:
        return found.read()


def render_table(db: str, result_set: ResultSet, run_ids: tuple[int, ...],
                 panels: tuple = ()) -> None:
    s = st.session_state
    by_id = {run.id: run for run in readers.get_runs(db)}
    filters, score_gap = results_filters.render_filters(db, result_set, run_ids, by_id, panels)
    # One row of controls: sorting, then paging (drawn once the page count is known).
    c_sort, c_run, c_order, c_size, c_page, c_export = st.columns(
        [2.5, 2.5, 2, 1.7, 1.7, 2], vertical_alignment="bottom")
    sight = blindness.sight_of(current_actor())  # blind review: the scores too
    sort, sort_run, descending, sort_panel = results_filters.render_sort(
        run_ids, by_id, c_sort, c_run, c_order, panels, people=sight.sees_all)
    panel_query = panel_columns.query(db, tuple(p.id for p in panels), sort_panel, sight)
    c_size.selectbox("Rows per page", PAGE_SIZES, key="results_page_size",
                     on_change=results_filters.handle_filter_change)
    stamp = readers.run_stamp(db, run_ids)
    size = s.results_page_size

    def read(page_number: int) -> ResultsPage:
        return readers.get_results_page(
            db, result_set.dataset_id, result_set.rubric_version_id, run_ids, filters, sort,
            sort_run, descending, (page_number - 1) * size, size, stamp, score_gap,
            DISTRIBUTION_BINS, **panel_query)

    page_number = max(1, int(s.results_page))
    try:
        page = read(page_number)
    except InvalidInputError as exc:
        if sort != "people":
            raise
        # The service refuses people's score while a shown panel's member still grades;
        # the sort picker above stays usable.
        st.warning(md_escape(str(exc)))
        return
    pages = max(1, math.ceil(page.total / size))
    if page_number > pages:
        s.results_page = page_number = pages
        page = read(page_number)
    c_page.number_input(f"Page (of {pages:,})", min_value=1, max_value=pages,
                        key="results_page")
    with c_export:
        render_export(db, result_set, run_ids, filters, sort, sort_run, descending, score_gap,
                      tuple(p.id for p in panels), sort_panel)

    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Responses", f"{page.dataset_total:,}")
    m2.metric("Judge failed or fell back", f"{page.failed_total:,}")
    m3.metric("Judges disagree", f"{page.disagree_total:,}",
              help=results_filters.disagree_help(score_gap))
    m4.metric("Reviewed by a person", f"{page.reviewed_total:,}")
    st.caption(f"**Judges disagree** means: {results_filters.disagree_help(score_gap)}")

    if not page.rows:
        st.info("No response matches these filters. Clear the search or the checkboxes.")
        return
    rows = results_table.table_rows(page, by_id)
    columns = results_table.column_config(page, by_id)
    score_columns = [results_table.score_column(by_id[r]) for r in page.run_ids]
    table_key = f"results_table_{s.results_table_nonce}"
    response_ids = [row.response_id for row in page.rows]
    if panels:
        score_columns += panel_columns.add_columns(
            rows, page, panels,
            panel_columns.page_results(db, panels, tuple(response_ids), sight))
        columns.update(panel_columns.column_config(panels))
        st.caption("Judge panels are columns like the runs: the score range, a criterion's "
                   "verdict and sorting by score can use them. “Judge failed” and “Judges "
                   "disagree” are about the runs (the panels' members).")
    showing = (f"Showing {page.offset + 1:,}–{page.offset + len(page.rows):,} of "
               f"{page.total:,} matching responses")
    st.caption(f"{showing}. Click a row to open the response with every run's verdicts.")
    st.dataframe(results_table.styled_table(rows, score_columns), hide_index=True,
                 width="stretch", height="content", column_config=columns, key=table_key,
                 on_select=lambda: handle_row_selected(table_key, response_ids),
                 selection_mode=["single-row", "single-cell"])
    if pages > 1:
        st.caption(f"{showing} · page {page_number:,} of {pages:,}: change the page above.")
    with st.expander(f"Score distribution of the {page.total:,} matching responses",
                     icon=":material/bar_chart:"):
        results_table.render_distribution(page, by_id, panels)
    grade_handoff.render_grade_these(db, result_set, run_ids, filters, page.total, score_gap,
                                     panel_query)
    if s.results_dialog_pending:
        s.results_dialog_pending = False
        if s.results_open_response in response_ids:
            open_response(db, result_set, run_ids, page, panels)


def render_export(db: str, result_set: ResultSet, run_ids: tuple[int, ...],
                  filters: ResultsFilter, sort: str, sort_run: int | None, descending: bool,
                  score_gap: float, panel_ids: tuple[int, ...] = (),
                  sort_panel: int | None = None) -> None:
    with st.popover("Export", icon=":material/download:", width="stretch"):
        stem = file_stem("results", result_set.dataset_name, result_set.rubric_name,
                         version=result_set.version_number)
        st.caption("One record per response × run (and × panel): judge and effective scores, "
                   "the response as uploaded (query, text and the upload's own columns as "
                   "`upload.<column>`), and per criterion the judge's verdict and reason, the "
                   "human verdict and reviewer; a panel's records add its ties and members' "
                   "verdicts.")
        for fmt, mime in (("csv", "text/csv"), ("jsonl", "application/jsonl")):
            st.download_button(
                f"Results {fmt.upper()}",
                data=lambda fmt=fmt: export_runs(db, run_ids, fmt, panel_ids),
                file_name=f"{stem}.{fmt}", mime=mime, on_click="ignore",
                key=f"results_export_{fmt}", width="stretch")
        st.download_button(
            "This table (CSV)", data=lambda: csv_export(db, result_set, run_ids, filters, sort,
                                                        sort_run, descending, score_gap,
                                                        panel_ids, sort_panel),
            file_name=f"{stem}-table.csv", mime="text/csv", on_click="ignore",
            key="results_export_table", width="stretch",
            help="The matching responses of every page, one column per run (and panel), "
                 "then the response as uploaded.")


def open_response(db: str, result_set: ResultSet, run_ids: tuple[int, ...],
                  page: ResultsPage, panels: tuple = ()) -> None:
    row = next(r for r in page.rows if r.response_id == st.session_state.results_open_response)
    label = row.external_id or f"#{row.response_id}"
    st.dialog(f"Response {safe_text.md(label)}", width="large")(render_detail)(
        db, result_set, run_ids, row.response_id, panels)


def render_detail(db: str, result_set: ResultSet, run_ids: tuple[int, ...],
                  response_id: int, panels: tuple = ()) -> None:
    # Blind review: a reviewer sees other people's verdicts only where they answered too.
    sight = blindness.sight_of(current_actor())
    detail = readers.get_response_detail(db, response_id, result_set.rubric_version_id,
                                         run_ids, readers.run_stamp(db, run_ids),
                                         sight=sight)
    review_button, history, _ = st.columns([2, 2, 3], vertical_alignment="bottom")
    review_button.button("Review this response", key="results_to_review",
                         icon=":material/rate_review:", width="stretch",
                         on_click=handle_open_in_review,
                         args=(result_set.dataset_id, result_set.rubric_version_id,
                               response_id))
    if st.session_state.results_goto_review:  # a click reruns only this dialog
        st.session_state.results_goto_review = False
        st.switch_page("app_pages/review.py")
    with history:
        response_view.render_history(detail)
    response_view.render_scores(detail)
    panel_columns.render_detail(db, panels, response_id, sight)
    response_view.render_response_text(detail)
    st.markdown("**Per criterion**")
    response_view.render_criteria(detail)


if st.session_state.results_goto_review:
    st.session_state.results_goto_review = False
    st.switch_page("app_pages/review.py")
st.title("Results")
st.caption("Effective scores of every response under each run: the judge's verdicts with "
           "the human verdicts in their place, scored by the same aggregation.")
db = runtime.database_key()
runtime.ensure_worker()  # after a restart, interrupted runs resume when results are opened
url.restore("results", results_filters.URL_FIELDS)  # a link, a reload or coming back
try:
    panel_columns.render_stale_combine({r.id for r in readers.get_runs(db)})
    # The run and panel pickers get whole rows: their chips carry a run's grader and model,
    # which half a row at 1280 px cut off after the first chip.
    # The button to combine the runs shown sits beside the result set, drawn once they are.
    top, _, combine = st.columns([4, 3, 2], vertical_alignment="bottom")
    chosen = pick_result_set(db, top)
    if chosen is not None:
        run_ids = pick_runs(db, chosen, st.container())
        wanted = list(st.session_state.results_panel_ids)
        panels = panel_columns.pick_panels(db, chosen, st.container())
        gone = [p for p in wanted if p not in {panel.id for panel in panels}]
        if gone and url.from_url("results"):
            url.note("results", "Panel " + ", ".join(f"P{p}" for p in gone) + " of the link "
                     "no longer exists here: left out.")
        panel_columns.render_combine(run_ids, {r.id: r for r in readers.get_runs(db)},
                                     combine)
        for message in url.notes("results"):
            st.warning(md_escape(message))
        flash = st.session_state.results_flash
        if flash:
            st.session_state.results_flash = None
            kind, message = flash
            getattr(st, kind)(md_escape(message))
        if not run_ids:
            st.info("Pick at least one run to compare.")
        else:
            render_table(db, chosen, run_ids, panels)
except RubricWorkbenchError as exc:
    st.error(md_escape(str(exc)))
url.save("results", results_filters.URL_FIELDS)
