"""The Compare page's form for a new comparison: a rubric version, two sources (two datasets,
or one dataset and two values of one of its columns), how rows are paired, and the judge."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.run_settings import MAX_EXAMPLES
from storage.services import column_sources, comparisons, pair_calibration
from storage.services.column_sources import RESPONSE_TEXT, column_name
from storage.services.comparisons import Source
from storage.services.pair_calibration import PairCalibration
from ui import compare_readers, runtime
from ui import results_readers as readers
from ui.auth import current_actor
from ui.boundary import plain

MODES = {"datasets": "Two datasets", "split": "One dataset, split by a column",
         "columns": "Two text columns of one dataset"}
MATCH = {"id": "by id", "query": "by query text"}


@dataclass(frozen=True)
class Choice:
    """What the form holds, ready for ``create_comparison``; ``problem`` when it is not."""

    version_id: int | None = None
    a: Source | None = None
    b: Source | None = None
    problem: str | None = None
    columns: tuple[int, str, str] | None = None  # (dataset, column A, column B) to make sources


def _fix(key: str, options: list) -> None:
    """A picker's value fixed up to a listed option (a deleted one, another tab's state)."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0] if options else None


def _rubric_version(db: str) -> int | None:
    rubrics = readers.get_rubric_list(db)
    if not rubrics:
        return None
    names = {r.id: r.name for r in rubrics}
    _fix("compare_rubric_id", list(names))
    left, right = st.columns([3, 1])
    rubric_id = left.selectbox("Rubric", list(names), key="compare_rubric_id",
                               format_func=names.get)
    versions = {v.id: f"version {v.number}" for v in readers.get_versions(db, rubric_id)}
    if st.session_state.compare_version_id not in versions:
        st.session_state.compare_version_id = max(versions) if versions else None
    return right.selectbox("Version", list(versions), key="compare_version_id",
                           format_func=versions.get)


def _two_datasets(names: dict[int, str]) -> Choice:
    ids = list(names)
    _fix("compare_a", ids)
    if st.session_state.compare_b not in ids:
        st.session_state.compare_b = ids[1] if len(ids) > 1 else ids[0]
    left, right = st.columns(2)
    a = left.selectbox("Source A (the baseline)", ids, key="compare_a", format_func=names.get)
    b = right.selectbox("Source B (compared with A)", ids, key="compare_b",
                        format_func=names.get)
    if a == b:
        return Choice(problem="Choose two different datasets, or split one dataset by a "
                              "column.")
    return Choice(a=Source(a), b=Source(b))


def _split(db: str, datasets: dict[int, object]) -> Choice:
    ids = list(datasets)
    _fix("compare_dataset", ids)
    dataset_id = st.selectbox("Dataset", ids, key="compare_dataset",
                              format_func=lambda i: datasets[i].name)
    columns = {k: v for k, v in readers.get_metadata_columns(
        db, dataset_id, datasets[dataset_id].response_count).items() if v and len(v) >= 2}
    if not columns:
        return Choice(problem="This dataset has no column with two or more values (such as "
                              "model) to split it by; upload one, or compare two datasets.")
    _fix("compare_column", list(columns))
    left, middle, right = st.columns(3)
    column = left.selectbox("Column", list(columns), key="compare_column")
    values = list(columns[column])
    _fix("compare_a_value", values)
    if st.session_state.compare_b_value not in values:
        st.session_state.compare_b_value = values[1]
    a = middle.selectbox("Source A: value", values, key="compare_a_value")
    b = right.selectbox("Source B: value", values, key="compare_b_value")
    if a == b:
        return Choice(problem="Choose two different values of the column.")
    return Choice(a=Source(dataset_id, column, a), b=Source(dataset_id, column, b))


def _columns(db: str, datasets: dict[int, object]) -> Choice:
    ids = list(datasets)
    _fix("compare_dataset", ids)
    dataset_id = st.selectbox("Dataset", ids, key="compare_dataset",
                              format_func=lambda i: datasets[i].name)
    columns = [RESPONSE_TEXT, *compare_readers.get_upload_columns(
        db, dataset_id, datasets[dataset_id].response_count)]
    if len(columns) < 2:
        return Choice(problem="This dataset kept no column beside the response text; upload "
                              "a file with two answers per row (e.g. before, after).")
    _fix("compare_a_column", columns)
    if st.session_state.compare_b_column not in columns:
        st.session_state.compare_b_column = columns[1]
    left, right = st.columns(2)
    a = left.selectbox("Source A: column", columns, key="compare_a_column",
                       format_func=column_name)
    b = right.selectbox("Source B: column", columns, key="compare_b_column",
                        format_func=column_name)
    if a == b:
        return Choice(problem="Choose two different columns.")
    st.caption("Each column becomes a dataset of its own (“dataset · column”, the row's id "
               "and query kept), made when the comparison starts; the rows are paired by id.")
    return Choice(columns=(dataset_id, a, b))


def render_form(db: str) -> Choice:
    """Draw the pickers; the choice, or why it cannot be started yet."""
    version_id = _rubric_version(db)
    if version_id is None:
        return Choice(problem="No rubric yet: write one on the Rubrics page first.")
    datasets = {d.id: d for d in readers.get_dataset_list(db)}
    if not datasets:
        return Choice(problem="No responses yet: upload some on the Responses page first.")
    mode = st.radio("Sources", list(MODES), key="compare_mode", format_func=MODES.get,
                    horizontal=True)
    if mode == "datasets":
        if len(datasets) < 2:
            return Choice(problem="Only one dataset: upload a second one, or split this one "
                                  "by a column.")
        choice = _two_datasets({i: d.name for i, d in datasets.items()})
    elif mode == "split":
        choice = _split(db, datasets)
    else:
        choice = _columns(db, datasets)
    if mode != "columns":  # two columns of one row: always the row itself
        st.radio("Pair responses", list(MATCH), key="compare_match", format_func=MATCH.get,
                 horizontal=True, help="By the rows' id (the same id in both sources), or by "
                                       "the query text (split by a column, ids differ per row)")
    left, right = st.columns(2)
    left.text_input("Judge model", key="compare_model", placeholder="openai/gpt-4.1-mini")
    right.text_input("API base (optional)", key="compare_api_base",
                     placeholder="http://127.0.0.1:8000/v1")
    st.checkbox("Holistic: one question for the whole rubric instead of one per criterion",
                key="compare_holistic")
    st.number_input("Calibration examples per criterion", min_value=0, max_value=MAX_EXAMPLES,
                    step=1, key="compare_examples",
                    help="Pairs of this rubric version that people decided on the Review "
                         "pairs page (agreed or adjudicated) shown to the judge as worked "
                         "examples; pairs used as examples are left out of this "
                         "comparison's figures. 0: none.")
    if choice.problem:
        return choice
    if not st.session_state.compare_model.strip():
        return Choice(problem="Name the judge model (e.g. openai/gpt-4.1-mini).")
    return Choice(version_id=version_id, a=choice.a, b=choice.b, columns=choice.columns)


def handle_start(choice: Choice) -> None:
    """Create the comparison and judge it in the background; a second click on the same
    work while it runs shows that comparison instead of starting a copy."""
    s = st.session_state
    sessions = runtime.get_sessions()
    model, api_base = s.compare_model.strip(), s.compare_api_base.strip().rstrip("/") or None
    match_by = s.compare_match
    if choice.columns is not None:
        try:
            made = column_sources.sources_from_columns(sessions, *choice.columns,
                                                       actor=current_actor())
        except RubricWorkbenchError as exc:
            s.compare_flash = ("error", plain(str(exc)))
            return
        if made.made:
            readers.get_dataset_list.clear()
        choice = Choice(version_id=choice.version_id, a=Source(made.a_dataset_id),
                        b=Source(made.b_dataset_id))
        match_by = "id"
    k = int(s.compare_examples or 0)
    active = [c for c in comparisons.list_comparisons(sessions) if not c.finished
              and (c.settings.get(pair_calibration.KEY) or {}).get("k", 0) == k
              and c.rubric_version_id == choice.version_id and c.model == model
              and c.settings.get("api_base") == api_base and c.holistic == s.compare_holistic
              and c.match_by == match_by and c.source_a == choice.a
              and c.source_b == choice.b]
    if active:
        s.compare_selected = active[0].id
        s.compare_flash = ("info", f"Comparison #{active[0].id} of the same sources is already "
                                   "running; it is shown below.")
        return
    try:
        made = comparisons.create_comparison(
            sessions, rubric_version_id=choice.version_id, a=choice.a, b=choice.b, model=model,
            match_by=match_by, holistic=s.compare_holistic,
            settings={"api_base": api_base}, actor=current_actor(),
            calibration=PairCalibration(k=k) if k else None)
    except RubricWorkbenchError as exc:
        s.compare_flash = ("error", plain(str(exc)))
        return
    s.compare_selected = made.id
    s.compare_flash = ("success", f"Comparison #{made.id} started: {made.pair_count} pairs, "
                                  "each asked in both orders.")
    judge_queued(sessions, made.id)
    compare_readers.clear()


def judge_queued(sessions, comparison_id: int) -> None:
    """Who judges a comparison just queued: the app's in-process worker takes queued
    comparisons by itself, so a thread of our own would only race it (one of the two gets
    ComparisonBusyError); a thread only when the worker is on but could not start here.
    With the worker turned off, it waits for a ``rubric-workbench worker`` process."""
    from storage.jobs.comparison_runner import start_in_background

    if runtime.worker_enabled() and not runtime.ensure_worker():
        start_in_background(sessions, comparison_id, actor=current_actor())
