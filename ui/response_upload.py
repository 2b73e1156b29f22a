"""Adding responses to a dataset: a file upload with its column-mapping step, or one pasted
response. Nothing is written unless every row is valid."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
import streamlit as st

from storage.column_guess import looks_like_ids
from storage.dto import DatasetInfo
from storage.errors import ImportProblemsError, Problem, StorageError
from storage.response_files import (
    ColumnMapping,
    NewResponse,
    ParsedFile,
    parse_file,
    to_responses,
)
from storage.services import datasets as service
from ui import catalog, safe_text
from ui.auth import current_actor
from ui.boundary import count, plain
from ui.response_browse import short
from ui.runtime import get_sessions
from ui.wording import plural

state = st.session_state
MAX_UPLOAD_VARIABLE = "RUBRIC_WORKBENCH_MAX_UPLOAD_MB"
PREVIEW_ROWS = 8
NONE = "(none)"
NEW_DATASET = 0  # the "Into dataset" choice that creates one named after the file


def flash(message: str, kind: str = "success") -> None:
    state["responses_flash"] = (kind, message)


def max_upload_mb() -> float:
    """The largest file accepted (50 MB unless RUBRIC_WORKBENCH_MAX_UPLOAD_MB says otherwise)."""
    try:
        return float(os.environ.get(MAX_UPLOAD_VARIABLE, "") or 50)
    except ValueError:
        return 50.0


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} kB"


def render_problems(problems: list[tuple[str, str]], what: str) -> None:
    noun = "problem" if len(problems) == 1 else "problems"
    st.error(plain(f"Nothing was written: {what} has {len(problems)} {noun}. "
                   f"Fix {'it' if len(problems) == 1 else 'them'} and try again."))
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


# -- handlers ----------------------------------------------------------------------------
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


# -- drawing -----------------------------------------------------------------------------
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


def render_upload(datasets: list[DatasetInfo]) -> None:
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
    guess = ColumnMapping.guess(columns, parsed.rows)
    st.markdown(f"**1. Map the columns** — {plain(upload.name)}: "
                f"{plural(len(parsed.rows), 'row')}, {parsed.description}")
    base = f"responses_map_{state['responses_upload_nonce']}"
    cols = st.columns(5)
    with cols[0]:
        text = _mapping_select("Response text", columns, guess.text, f"{base}_text",
                               optional=False)
    with cols[1]:
        query = _mapping_select("Query", columns, guess.query, f"{base}_query")
    with cols[2]:
        thinking = _mapping_select("Thinking", columns, guess.thinking, f"{base}_thinking")
    with cols[3]:
        id_column = _mapping_select("ID", columns, guess.id, f"{base}_id")
    with cols[4]:
        reference = _mapping_select("Reference answer", columns, guess.reference,
                                    f"{base}_reference")
    chosen = [c for c in (text, query, thinking, id_column, reference) if c]
    if len(set(chosen)) != len(chosen):
        st.error("Each column can be used once: pick different columns for text, query, "
                 "thinking, id and reference answer.")
        return
    mapping = ColumnMapping(text=text, query=query, thinking=thinking, id=id_column,
                            reference=reference)
    extra = [c for c in columns if c not in mapping.mapped()]
    if extra:
        st.caption("Kept as metadata: " + ", ".join(extra))

    responses, problems = get_validated(data, upload.name, mapping)
    st.markdown("**2. Check the preview**")
    preview = pd.DataFrame([
        {"Where": r.location, "ID": r.external_id or "", "Query": short(r.query),
         "Response": short(r.output), "Thinking": short(r.thinking, 60),
         **({"Reference": short(r.reference, 60)} if reference else {})}
        for r in responses[:PREVIEW_ROWS]
    ])
    if not preview.empty:
        st.caption(f"The first {plural(min(len(responses), PREVIEW_ROWS), 'row')} as they "
                   "will be imported with this mapping:")
        st.dataframe(preview, hide_index=True, width="stretch")
    if looks_like_ids(text, parsed.rows):
        st.warning(plain(f"The response text column '{text}' holds short unique values, like "
                         "ids: is it really the model's answer? Pick the column with the "
                         "answers under “Response text”."), icon=":material/help:")
    if problems:
        render_problems([(p.location, p.message) for p in problems], upload.name)
        return
    st.success("The row is valid." if len(responses) == 1
               else f"All {plural(len(responses), 'row')} are valid.")

    st.markdown("**3. Import**")
    # A new dataset named after the file unless the user picks one: whichever dataset
    # happened to be open is not a safe guess for where a file belongs.
    options = [NEW_DATASET] + [d.id for d in datasets if not d.archived]
    names = {d.id: d.name for d in datasets}
    left, right = st.columns(2)
    target_id = left.selectbox(
        "Into dataset", options, index=0, key=f"responses_target_{base}",
        format_func=lambda i: safe_text.text(names[i]) if i else "A new dataset…")
    new_name = ""
    if target_id == NEW_DATASET:
        new_name = right.text_input("New dataset name", value=Path(upload.name).stem,
                                    key=f"responses_new_name_{base}")
    target = next((d for d in datasets if d.id == target_id), None)
    if st.button(f"Import {count(len(responses), 'response')}", type="primary",
                 key="responses_import"):
        handle_import(responses, upload.name, target, new_name)
