"""The Results page's filter and sort widgets, read into a ResultsFilter (no data here)."""

from __future__ import annotations

import streamlit as st

from storage.dto import RunInfo
from storage.services.panel_results import panel_label
from storage.services.results import ResultSet, ResultsFilter, VerdictFilter, filter_choices
from ui import results_readers as readers
from ui import safe_text
from ui import url_state as url
from ui.verdict_view import run_label

SORTS = {
    "response": "Dataset order",
    "score": "Effective score",
    "spread": "Gap between runs",
    "reviewed": "Reviewed criteria",
    "people": "People's score",
}
ORDERS = {False: "Ascending", True: "Descending"}
REVIEWED = {"any": "All", "reviewed": "Reviewed", "not_reviewed": "Not reviewed"}
VERDICT_LABELS = {"MET": "MET", "UNMET": "UNMET", "CANNOT_ASSESS": "CANNOT ASSESS"}
ANY_RUN = 0  # run ids start at 1
NO_COLUMN = ""
PANEL = "panel:"  # a judge panel's option in the run pickers: "panel:<id>" (runs are ints)


PAGE_SIZES = [25, 50, 100, 200]
# The view a link to Results reproduces (ui/url_state.py): set, runs, panels, filters, sort and
# page. Ids that no longer exist are dropped by the pickers, which fix stale values anyway.
URL_FIELDS = (
    url.Field("set", "results_set", url.int_pair, url.write_pair, "dataset and rubric"),
    url.Field("runs", "results_run_ids", url.id_list, url.write_ids, "runs"),
    url.Field("panels", "results_panel_ids", url.id_list, url.write_ids, "panels"),
    url.Field("q", "results_search", url.text, label="search"),
    url.Field("failed", "results_failed_only", url.flag, url.write_flag),
    url.Field("disagree", "results_disagree_only", url.flag, url.write_flag),
    url.Field("gap", "results_score_gap", url.number(0.0, 1.0), label="score gap"),
    url.Field("reviewed", "results_reviewed", url.choice(REVIEWED), label="human review"),
    url.Field("range", "results_score_range", url.score_range,
              lambda v: f"{v[0]:g}-{v[1]:g}", "score range"),
    url.Field("range_of", "results_score_run", url.int_or_text),
    url.Field("col", "results_meta_column", url.text, label="column"),
    url.Field("val", "results_meta_value", url.text, label="column value"),
    url.Field("val_text", "results_meta_text", url.text, label="column value"),
    url.Field("crit", "results_verdict_criterion", url.integer(1), label="criterion"),
    # MET / UNMET / CANNOT_ASSESS, or an option label (checked against the criterion's)
    url.Field("verdict", "results_verdict_value", url.text),
    url.Field("verdict_in", "results_verdict_run", url.int_or_text),
    url.Field("sort", "results_sort", url.choice(SORTS)),
    url.Field("sort_of", "results_sort_run", url.int_or_text),
    url.Field("desc", "results_descending", url.flag, url.write_flag, "order"),
    url.Field("size", "results_page_size", url.choice(PAGE_SIZES), label="rows per page"),
    url.Field("page", "results_page", url.integer(1), label="page"),
)


def panel_option(panel_id: int) -> str:
    return f"{PANEL}{panel_id}"


def split_column(value) -> tuple[int | None, int | None]:
    """A run picker's value as (run id, panel id); (None, None) for "any"."""
    if isinstance(value, str) and value.startswith(PANEL):
        return None, int(value.removeprefix(PANEL))
    return (value or None), None


def column_label(value, by_id: dict[int, RunInfo], panels) -> str:
    run_id, panel_id = split_column(value)
    if panel_id is not None:
        panel = next(p for p in panels if p.id == panel_id)
        return safe_text.text(f"{panel_label(panel)} (judge panel)")
    return safe_text.text(run_label(by_id[run_id]))


def handle_filter_change() -> None:
    st.session_state.results_page = 1


def render_filters(db: str, result_set: ResultSet, run_ids: tuple[int, ...],
                   by_id: dict[int, RunInfo], panels=()) -> tuple[ResultsFilter, float]:
    """The filter widgets; returns the filter and the score gap that counts as disagreeing.
    Judge panels shown (``panels``) are columns the score range and verdict filter offer."""
    s = st.session_state
    c1, c2, c3 = st.columns([3, 3, 3])
    c1.text_input("Search id, query and output", key="results_search",
                  on_change=handle_filter_change, placeholder="words in the response")
    c2.checkbox("Judge failed or fell back", key="results_failed_only",
                on_change=handle_filter_change)
    flag, gap = c2.columns([3, 2], vertical_alignment="center")
    flag.checkbox("Judges disagree", key="results_disagree_only",
                  on_change=handle_filter_change, help=disagree_help(s.results_score_gap))
    gap.number_input("Score gap", min_value=0.0, max_value=1.0, step=0.05, format="%.2f",
                     key="results_score_gap", on_change=handle_filter_change,
                     help="Two comparable scores further apart than this count as a "
                          "disagreement.")
    c3.radio("Human review", list(REVIEWED), format_func=REVIEWED.get, horizontal=True,
             key="results_reviewed", on_change=handle_filter_change)
    narrowed = bool(s.results_meta_column or s.results_verdict_criterion
                    or tuple(s.results_score_range) != (0.0, 1.0))
    with st.expander("More filters: score range, a column of the upload, a criterion's "
                     "verdict", icon=":material/filter_list:", expanded=narrowed):
        low, high, score_column = render_score_range(run_ids, by_id, panels)
        metadata = render_metadata_filter(db, result_set)
        verdict = render_verdict_filter(db, result_set, run_ids, by_id, panels)
    score_run, score_panel = split_column(score_column)
    return ResultsFilter(
        search=s.results_search, failed_only=s.results_failed_only,
        disagree_only=s.results_disagree_only, reviewed=s.results_reviewed,
        min_score=low, max_score=high, score_run_id=score_run, score_panel_id=score_panel,
        metadata=metadata, verdict=verdict), float(s.results_score_gap)


def disagree_help(gap: float) -> str:
    return (f"Two runs that give per-criterion verdicts differ on some criterion, or two runs "
            f"whose scores are comparable are more than {gap:.2f} apart. A holistic "
            "(rubric-as-judge) score is compared only with other holistic scores, never with "
            "a score made from verdicts, and raw sums only with raw sums.")


def render_score_range(run_ids: tuple[int, ...], by_id: dict[int, RunInfo], panels=()):
    s = st.session_state
    normalized = (all(by_id[r].settings.normalize for r in run_ids if r in by_id)
                  and all(p.scoring.normalize for p in panels))
    if not (normalized and run_ids):
        return None, None, None
    c4, c5 = st.columns([3, 2])
    low, high = c4.slider("Effective score between", 0.0, 1.0, step=0.05,
                          key="results_score_range", on_change=handle_filter_change)
    options = [ANY_RUN, *run_ids, *(panel_option(p.id) for p in panels)]
    if s.results_score_run not in options:
        s.results_score_run = ANY_RUN
    anything = "any selected run or panel" if panels else "any selected run"
    score_run = c5.selectbox(
        "Score range applies to", options, key="results_score_run",
        format_func=lambda r: anything if r == ANY_RUN else column_label(r, by_id, panels),
        on_change=handle_filter_change) or None
    if (low, high) == (0.0, 1.0):
        return None, None, score_run  # the full range also keeps responses without a score
    return low, high, score_run


def render_metadata_filter(db: str, result_set: ResultSet) -> tuple[tuple[str, str], ...]:
    s = st.session_state
    size = next((d.response_count for d in readers.get_dataset_list(db)
                 if d.id == result_set.dataset_id), 0)
    columns = readers.get_metadata_columns(db, result_set.dataset_id, size)
    if not columns:
        st.caption("This dataset has no other columns: an upload keeps every column it does "
                   "not map (e.g. `model`) for filtering here.")
        return ()
    if s.results_meta_column not in (NO_COLUMN, *columns):
        s.results_meta_column = NO_COLUMN
    left, right = st.columns(2)
    column = left.selectbox("Column of the upload", [NO_COLUMN, *columns],
                            key="results_meta_column", on_change=handle_filter_change,
                            format_func=lambda c: "(any)" if c == NO_COLUMN
                            else safe_text.text(c))
    if column == NO_COLUMN:
        return ()
    values = columns[column]
    if values is None:  # too many distinct values to list
        value = right.text_input(f"{safe_text.md(column)} is exactly", key="results_meta_text",
                                 on_change=handle_filter_change)
    else:
        if s.results_meta_value not in values:
            s.results_meta_value = values[0] if values else None
        value = right.selectbox(f"{safe_text.md(column)} is", values, key="results_meta_value",
                                format_func=safe_text.text, on_change=handle_filter_change)
    return ((column, value),) if value else ()


def render_verdict_filter(db: str, result_set: ResultSet, run_ids: tuple[int, ...],
                          by_id: dict[int, RunInfo], panels=()) -> VerdictFilter | None:
    s = st.session_state
    criteria = {c.id: c for c in readers.get_version(db, result_set.rubric_version_id).criteria}
    with_verdicts = [*(r for r in run_ids if by_id[r].grader != "rubric_as_judge"),
                     *(panel_option(p.id) for p in panels)]
    if s.results_verdict_criterion not in (None, *criteria):
        s.results_verdict_criterion = None
    c1, c2, c3 = st.columns([3, 2, 3])
    criterion = c1.selectbox(
        "Criterion", [None, *criteria], key="results_verdict_criterion",
        on_change=handle_filter_change,
        format_func=lambda c: "(any)" if c is None else safe_text.text(
            f"{criteria[c].position + 1}. {criteria[c].label}"))
    # a multi-choice criterion is filtered on its option labels (filter_choices)
    choices = list(filter_choices(criteria[criterion]) if criterion is not None
                   else VERDICT_LABELS)
    if s.results_verdict_value not in choices:
        s.results_verdict_value = choices[0]
    c2.selectbox("is", choices, format_func=lambda v: safe_text.text(VERDICT_LABELS.get(v, v)),
                 key="results_verdict_value", on_change=handle_filter_change)
    if not with_verdicts:
        c3.caption("No selected run gives per-criterion verdicts.")
        return None
    if s.results_verdict_run not in with_verdicts:
        s.results_verdict_run = with_verdicts[0]
    c3.selectbox("in run or panel (a person's verdict counts first)" if panels else
                 "in run (a person's verdict counts first)", with_verdicts,
                 key="results_verdict_run", on_change=handle_filter_change,
                 format_func=lambda r: column_label(r, by_id, panels))
    if criterion is None:
        return None
    run_id, panel_id = split_column(s.results_verdict_run)
    return VerdictFilter(criterion, s.results_verdict_value, run_id, panel_id)


def render_sort(run_ids: tuple[int, ...], by_id: dict[int, RunInfo], c1, c2, c3, panels=(),
                *, people: bool = False) -> tuple[str, int | None, bool, int | None]:
    """(sort, the run sorted by, descending, the judge panel sorted by). ``people``: offer
    people's score (for a viewer who sees every verdict)."""
    sorts = [key for key in SORTS if people or key != "people"]
    if st.session_state.get("results_sort") not in sorts:
        st.session_state.results_sort = "response"
    sort = c1.selectbox("Sort by", sorts, format_func=SORTS.get, key="results_sort",
                        on_change=handle_filter_change)
    sort_run = sort_panel = None
    if sort == "score" and run_ids:
        options = [*run_ids, *(panel_option(p.id) for p in panels)]
        if st.session_state.get("results_sort_run") not in options:
            st.session_state.results_sort_run = run_ids[0]
        chosen = c2.selectbox("Score of", options,
                              format_func=lambda r: column_label(r, by_id, panels),
                              key="results_sort_run", on_change=handle_filter_change)
        sort_run, sort_panel = split_column(chosen)
    c3.selectbox("Order", list(ORDERS), format_func=ORDERS.get, key="results_descending",
                 on_change=handle_filter_change)
    return sort, sort_run, st.session_state.results_descending, sort_panel
