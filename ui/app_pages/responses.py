"""Responses: datasets, one pasted response, file uploads with column mapping, browsing."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
import streamlit as st

from storage.dto import DatasetInfo, ResponseInfo
from storage.errors import HumanVerdictsExistError, ImportProblemsError, Problem, StorageError
from storage.response_files import (
    ColumnMapping,
    NewResponse,
    ParsedFile,
    parse_file,
    to_responses,
)
from storage.services import datasets as service
from ui import catalog
from ui.auth import current_actor
from ui.boundary import count, page_boundary, plain
from ui.runtime import database_key, get_sessions

state = st.session_state
MAX_UPLOAD_VARIABLE = "RUBRIC_WORKBENCH_MAX_UPLOAD_MB"
PAGE_SIZE = 15
PREVIEW_ROWS = 8
NONE = "(none)"


def max_upload_mb() -> float:
    """The largest file accepted (50 MB unless RUBRIC_WORKBENCH_MAX_UPLOAD_MB says otherwise)."""
    try:
        return float(os.environ.get(MAX_UPLOAD_VARIABLE, "") or 50)
    except ValueError:
        return 50.0


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} kB"


def flash(message: str, kind: str = "success") -> None:
    state["responses_flash"] = (kind, message)


def render_flash() -> None:
    if state["responses_flash"]:
        kind, message = state["responses_flash"]
        state["responses_flash"] = None
        (st.success if kind == "success" else st.info)(plain(message))


def render_problems(problems: list[tuple[str, str]], what: str) -> None:
    noun = "problem" if len(problems) == 1 else "problems"
    st.error(plain(f"Nothing was written: {what} has {len(problems)} {noun}. "
                   "Fix them and try again."))
    st.dataframe(pd.DataFrame(problems, columns=["Where", "Problem"]), hide_index=True,
                 width="stretch")


def _problems(exc: ImportProblemsError) -> list[tuple[str, str]]:
    return [(p.location or "file", p.message) for p in exc.problems]


@st.cache_data(ttl=600, max_entries=4, show_spinner="Reading the file…")
def get_parsed(data: bytes, filename: str) -> ParsedFile:
    """Parse once per distinct upload (the mapping step reruns the page often)."""
    return parse_file(data, filename)


@st.cache_data(ttl=600, max_entries=8, show_spinner="Checking every row…")
def get_validated(data: bytes, filename: str,
                  mapping: ColumnMapping) -> tuple[list[NewResponse], list[Problem]]:
    """Validate once per file and mapping: a large file is not re-checked on every click."""
    parsed = get_parsed(data, filename)
    return to_responses(parsed.rows, mapping, locations=parsed.locations)


# -- handlers --------------------------------------------------------------------------------
def handle_create_dataset(name: str, description: str) -> None:
    try:
        dataset = service.create_dataset(get_sessions(), name, description=description.strip(),
                                         actor=current_actor())
    except StorageError as exc:
        st.error(plain(f"Could not create the dataset: {exc}."))
        return
    catalog.clear_dataset_list()
    state["responses_goto"] = dataset.id
    flash(f"Created the dataset '{dataset.name}'. Upload a file or paste responses into it.")
    st.rerun()


def handle_archive(dataset: DatasetInfo, archived: bool) -> None:
    service.archive_dataset(get_sessions(), dataset.id, archived, actor=current_actor())
    catalog.clear_dataset_list()
    if archived:
        flash(f"Archived '{dataset.name}'. Turn on 'Show archived' to see or restore it.",
              "info")
    else:
        flash(f"Restored '{dataset.name}'.")
        state["responses_goto"] = dataset.id
    st.rerun()


def handle_delete(dataset: DatasetInfo) -> None:
    try:
        removed = service.delete_dataset(get_sessions(), dataset.id, confirm=True,
                                         actor=current_actor())
    except HumanVerdictsExistError as exc:
        st.error(plain(f"Not deleted: {exc}. People's verdicts are never deleted from here; "
                       "archive the dataset to hide it."))
        return
    # Runs, results, reviews and agreement all drew on this dataset: every reader changes.
    st.cache_data.clear()
    flash(f"Deleted '{dataset.name}' with {count(removed.responses, 'response')}, "
          f"{count(removed.runs, 'grading run')} and {count(removed.grades, 'grade')}.", "info")
    st.rerun()


def handle_paste(dataset: DatasetInfo, query: str, output: str, thinking: str,
                 external_id: str) -> None:
    if not output.strip():
        st.error("The response text is empty: paste the model's output to add it.")
        return
    try:
        response = service.add_response(
            get_sessions(), dataset.id, output, query=query or None,
            thinking=thinking or None, external_id=external_id.strip() or None,
                actor=current_actor())
    except ImportProblemsError as exc:
        render_problems(_problems(exc), "the response")
        return
    except StorageError as exc:
        st.error(plain(f"Could not add the response: {exc}."))
        return
    catalog.clear_dataset_readers()
    state["responses_upload_nonce"] += 1
    label = f" as '{response.external_id}'" if response.external_id else ""
    flash(f"Added the response{label} to '{dataset.name}'.")
    st.rerun()


def handle_import(responses: list[NewResponse], filename: str, target: DatasetInfo | None,
                  new_name: str) -> None:
    sessions = get_sessions()
    try:
        if target is None:
            if not new_name.strip():
                st.error("Give the new dataset a name.")
                return
            dataset = service.create_dataset(sessions, new_name, responses=responses,
                                             actor=current_actor())
            target_id, target_name = dataset.id, dataset.name
        else:
            service.import_responses(sessions, target.id, responses, actor=current_actor())
            target_id, target_name = target.id, target.name
    except ImportProblemsError as exc:
        render_problems(_problems(exc), filename)
        return
    except StorageError as exc:
        st.error(plain(f"Nothing was imported: {exc}."))
        return
    catalog.clear_dataset_readers()
    state["responses_goto"] = target_id
    state["responses_upload_nonce"] += 1
    flash(f"Imported {count(len(responses), 'response')} from {filename} into "
          f"'{target_name}'.")
    st.rerun()


def go_page(delta: int) -> None:
    state["responses_page"] = max(0, state["responses_page"] + delta)


# -- drawing ---------------------------------------------------------------------------------
def render_create(expanded: bool) -> None:
    with (st.expander("New dataset", expanded=expanded, icon=":material/add:"),
          st.form("responses_create_form")):
        name = st.text_input("Dataset name", placeholder="e.g. Support replies, November")
        description = st.text_input("Description (optional)")
        if st.form_submit_button("Create dataset", type="primary"):
            if not name.strip():
                st.error("Give the dataset a name.")
            else:
                handle_create_dataset(name, description)


def render_browse(dataset: DatasetInfo) -> None:
    if dataset.response_count == 0:
        st.info("This dataset is empty. Upload a CSV, JSONL or JSON file, or paste a "
                "response, using the tabs above.")
        return
    if state["responses_page_dataset"] != dataset.id:
        state["responses_page_dataset"] = dataset.id
        state["responses_page"] = 0
    pages = max(1, -(-dataset.response_count // PAGE_SIZE))
    state["responses_page"] = min(state["responses_page"], pages - 1)
    page = state["responses_page"]
    rows = catalog.get_response_page(database_key(), dataset.id, page * PAGE_SIZE, PAGE_SIZE)
    first = page * PAGE_SIZE + 1
    table = pd.DataFrame([
        {"#": first + i, "ID": r.external_id or "", "Query": _short(r.query),
         "Response": _short(r.output), "Thinking": "yes" if r.thinking else ""}
        for i, r in enumerate(rows)
    ])
    st.dataframe(table, hide_index=True, width="stretch", height=35 * (len(table) + 1) + 3,
                 column_config={"#": st.column_config.NumberColumn(width="small"),
                                "ID": st.column_config.TextColumn(width="small"),
                                "Query": st.column_config.TextColumn(width="medium"),
                                "Response": st.column_config.TextColumn(width="large"),
                                "Thinking": st.column_config.TextColumn(width="small")})
    prev, info, nxt = st.columns([1, 3, 1], vertical_alignment="center")
    prev.button("Previous", on_click=go_page, args=(-1,), disabled=page == 0,
                icon=":material/arrow_back:",
                key="responses_prev", width="stretch")
    info.markdown(f"Responses {first}–{first + len(rows) - 1} of {dataset.response_count} · "
                  f"page {page + 1} of {pages}", text_alignment="center")
    nxt.button("Next", on_click=go_page, args=(1,), disabled=page >= pages - 1,
               icon=":material/arrow_forward:", icon_position="right",
               key="responses_next", width="stretch")
    choice = st.selectbox("Read a response in full", range(len(rows)),
                          format_func=lambda i: f"#{first + i}"
                          + (f" · {rows[i].external_id}" if rows[i].external_id else ""),
                          key=f"responses_open_{dataset.id}_{page}")
    render_response(rows[choice])


def _short(text: str | None, limit: int = 120) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render_response(response: ResponseInfo) -> None:
    with st.container(border=True):
        if response.query:
            st.markdown("**Query**")
            st.text(response.query)
        if response.thinking:
            st.markdown("**Thinking**")
            st.text(response.thinking)
        st.markdown("**Response**")
        st.text(response.output)
        if response.metadata:
            st.markdown("**Other columns**")
            st.json(response.metadata, expanded=False)


def render_paste(dataset: DatasetInfo) -> None:
    # Not clear_on_submit: a refused response keeps its text; a saved one gets a fresh form
    # through the nonce that also resets the uploader.
    with st.form(f"responses_paste_form_{state['responses_upload_nonce']}"):
        query = st.text_area("Query (optional)", height=80,
                             help="The prompt or question the response answers")
        output = st.text_area("Response", height=160, help="The model's answer to grade")
        thinking = st.text_area("Thinking (optional)", height=80,
                                help="Reasoning the model produced before answering")
        external_id = st.text_input("ID (optional)", help="Your own id; unique in the dataset")
        if st.form_submit_button("Add response", type="primary"):
            handle_paste(dataset, query, output, thinking, external_id)


def _mapping_select(label: str, columns: list[str], guess: str | None, key: str,
                    optional: bool = True) -> str | None:
    options = ([NONE] if optional else []) + columns
    index = options.index(guess) if guess in options else 0
    choice = st.selectbox(label, options, index=index, key=key)
    return None if choice == NONE else choice


def render_upload(datasets: list[DatasetInfo], selected: DatasetInfo | None) -> None:
    limit = max_upload_mb()
    st.caption(f"CSV (with a header row), JSONL (one object per line) or JSON (a list of "
               f"objects). UTF-8 text, at most {limit:g} MB. Nothing is written unless "
               "every row is valid.")
    upload = st.file_uploader("Responses file", type=["csv", "jsonl", "ndjson", "json"],
                              key=f"responses_upload_{state['responses_upload_nonce']}",
                              max_upload_size=max(1, math.ceil(limit)))
    if upload is None:
        return
    data = upload.getvalue()
    if len(data) > limit * 1024 * 1024:
        st.error(plain(f"{upload.name} is {_size(len(data))}; the limit is {limit:g} MB. "
                       "Split it into smaller files and upload them into the same dataset "
                       f"(or raise {MAX_UPLOAD_VARIABLE})."))
        return
    try:
        parsed = get_parsed(data, upload.name)
    except ImportProblemsError as exc:
        render_problems(_problems(exc), upload.name)
        return
    columns = list(parsed.columns)
    if parsed.format == "csv" and len(columns) == 1 and (";" in columns[0] or "\t" in columns[0]):
        separator = "semicolons" if ";" in columns[0] else "tabs"
        st.error(plain(f"{upload.name} separates its columns with {separator}, so it reads as "
                       "a single column. Save it as comma-separated CSV (in Excel: CSV UTF-8, "
                       "comma delimited) and upload it again."))
        return
    guess = ColumnMapping.guess(columns)
    st.markdown(f"**1. Map the columns** — {upload.name}: {len(parsed.rows)} rows, "
                f"{parsed.format.upper()}")
    base = f"responses_map_{state['responses_upload_nonce']}"
    cols = st.columns(4)
    with cols[0]:
        text = _mapping_select("Response text", columns, guess.text, f"{base}_text",
                               optional=False)
    with cols[1]:
        query = _mapping_select("Query", columns, guess.query, f"{base}_query")
    with cols[2]:
        thinking = _mapping_select("Thinking", columns, guess.thinking, f"{base}_thinking")
    with cols[3]:
        id_column = _mapping_select("ID", columns, guess.id, f"{base}_id")
    chosen = [c for c in (text, query, thinking, id_column) if c]
    if len(set(chosen)) != len(chosen):
        st.error("Each column can be used once: pick different columns for text, query, "
                 "thinking and id.")
        return
    mapping = ColumnMapping(text=text, query=query, thinking=thinking, id=id_column)
    extra = [c for c in columns if c not in mapping.mapped()]
    if extra:
        st.caption("Kept as metadata: " + ", ".join(extra))

    responses, problems = get_validated(data, upload.name, mapping)
    st.markdown("**2. Check the preview**")
    preview = pd.DataFrame([
        {"Where": r.location, "ID": r.external_id or "", "Query": _short(r.query),
         "Response": _short(r.output), "Thinking": _short(r.thinking, 60)}
        for r in responses[:PREVIEW_ROWS]
    ])
    if not preview.empty:
        st.dataframe(preview, hide_index=True, width="stretch")
    if problems:
        render_problems([(p.location, p.message) for p in problems], upload.name)
        return
    st.success("The row is valid." if len(responses) == 1
               else f"All {len(responses)} rows are valid.")

    st.markdown("**3. Import**")
    options = [d.id for d in datasets if not d.archived] + [0]
    names = {d.id: d.name for d in datasets}
    default = options.index(selected.id) if selected and selected.id in options else 0
    left, right = st.columns(2)
    target_id = left.selectbox(
        "Into dataset", options, index=default, key=f"responses_target_{base}",
        format_func=lambda i: names[i] if i else "A new dataset…")
    new_name = ""
    if target_id == 0:
        new_name = right.text_input("New dataset name", value=Path(upload.name).stem,
                                    key=f"responses_new_name_{base}")
    target = next((d for d in datasets if d.id == target_id), None)
    if st.button(f"Import {count(len(responses), 'response')}", type="primary",
                 key="responses_import"):
        handle_import(responses, upload.name, target, new_name)


def render_page() -> None:
    st.title("Responses")
    st.caption("Datasets of model responses to grade: a query, the response and optionally "
               "the model's thinking.")
    render_flash()
    if state["responses_goto"]:
        state["responses_dataset_id"] = state["responses_goto"]
        state["responses_goto"] = None
    all_datasets = catalog.get_datasets(database_key(), True)
    shown = [d for d in all_datasets if state["responses_show_archived"] or not d.archived]
    render_create(expanded=not all_datasets)

    pick, toggle = st.columns([4, 1], vertical_alignment="bottom")
    toggle.toggle("Show archived", key="responses_show_archived")
    selected: DatasetInfo | None = None
    if shown:
        ids = [d.id for d in shown]
        by_id = {d.id: d for d in shown}
        if state["responses_dataset_id"] not in ids:
            state["responses_dataset_id"] = ids[0]
        pick.selectbox(
            "Dataset", ids, key="responses_dataset_id",
            format_func=lambda i: f"{by_id[i].name} — "
            f"{count(by_id[i].response_count, 'response')}"
            + (" (archived)" if by_id[i].archived else ""))
        selected = by_id[state["responses_dataset_id"]]
        with st.expander(f"All datasets ({len(shown)})", icon=":material/list:"):
            st.dataframe(
                pd.DataFrame([{"Name": d.name, "Responses": d.response_count,
                               "Description": d.description, "Created": d.created_at,
                               "Imported by": d.imported_by or "",
                               "Archived": d.archived} for d in shown]),
                hide_index=True, width="stretch",
                column_config={
                    "Created": st.column_config.DatetimeColumn(format="YYYY-MM-DD"),
                    "Archived": st.column_config.CheckboxColumn()},
            )
    else:
        pick.info("No datasets yet. Create one above, or upload a file below and it becomes "
                  "a new dataset. The Start page can load sample responses.")

    if selected is None:
        st.subheader("Upload a file", divider="gray")
        render_upload(all_datasets, None)
        return

    header, archive, delete = st.columns([4, 1, 1], vertical_alignment="bottom")
    header.subheader(plain(selected.name + ("  ·  archived" if selected.archived else "")),
                     divider="gray")
    with delete.popover("Delete", width="stretch", icon=":material/delete:"):
        st.markdown(plain(f"Deletes '{selected.name}', its "
                          f"{count(selected.response_count, 'response')} and every grade made "
                          "on them. This cannot be undone. "
                          "A dataset with human verdicts can only be archived."))
        sure = st.checkbox("Yes, delete it for good", key=f"responses_delete_sure_{selected.id}")
        if st.button("Delete dataset", type="primary", disabled=not sure,
                     key="responses_delete"):
            handle_delete(selected)
    if selected.archived:
        if archive.button("Restore", key="responses_restore", width="stretch"):
            handle_archive(selected, False)
    elif archive.button("Archive", key="responses_archive", width="stretch",
                        help="Hide it from lists; nothing is deleted"):
        handle_archive(selected, True)
    if selected.description:
        st.caption(plain(selected.description))
    browse, upload, paste = st.tabs([f"Browse ({selected.response_count})", "Upload a file",
                                     "Paste a response"])
    with browse:
        render_browse(selected)
    with upload:
        render_upload(all_datasets, selected)
    with paste:
        render_paste(selected)


with page_boundary(catalog.clear_dataset_readers):
    render_page()
