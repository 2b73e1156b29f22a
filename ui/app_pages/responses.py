"""Responses: pick a dataset and manage it (create, archive, delete); its tabs browse it
(ui.response_browse) and add responses to it (ui.response_upload)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.dto import DatasetInfo
from storage.errors import StorageError
from storage.services import datasets as service
from ui import catalog, deletion
from ui.auth import current_actor
from ui.boundary import count, page_boundary, plain
from ui.response_browse import render_browse
from ui.response_upload import flash, render_paste, render_upload
from ui.runtime import database_key, get_sessions, sessions_for

state = st.session_state


@st.cache_data(ttl=5, max_entries=20, show_spinner=False)
def get_deletion_summary(db: str, dataset_id: int):
    """Short TTL: a reviewer elsewhere may add the first human verdict at any time."""
    return service.deletion_summary(sessions_for(db), dataset_id)


def render_flash() -> None:
    if state["responses_flash"]:
        kind, message = state["responses_flash"]
        state["responses_flash"] = None
        (st.success if kind == "success" else st.info)(plain(message))


# -- handlers ----------------------------------------------------------------------------
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
    removed = deletion.delete_or_explain(
        dataset.name, lambda: service.delete_dataset(get_sessions(), dataset.id, confirm=True,
                                                     actor=current_actor()),
        get_deletion_summary.clear)
    if removed is None:
        return
    # Runs, results, reviews and agreement all drew on this dataset: every reader changes.
    st.cache_data.clear()
    flash(f"Deleted '{dataset.name}' with {count(removed.responses, 'response')}, "
          f"{count(removed.runs, 'grading run')} and {count(removed.grades, 'grade')}.", "info")
    st.rerun()


# -- drawing -----------------------------------------------------------------------------
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


def render_delete(dataset: DatasetInfo) -> None:
    """Only what can be done: a dataset with people's verdicts can be archived, not deleted."""
    summary = get_deletion_summary(database_key(), dataset.id)
    deletion.render_delete_or_archive(
        kind="dataset", name=dataset.name, item_id=dataset.id, archived=dataset.archived,
        summary=summary, holds=count(summary.responses, "response"), page="responses",
        on_archive=lambda: handle_archive(dataset, True),
        on_delete=lambda: handle_delete(dataset))


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
        render_upload(all_datasets)
        return

    header, archive, delete = st.columns([4, 1.3, 1.6], vertical_alignment="bottom")
    header.subheader(plain(selected.name + ("  ·  archived" if selected.archived else "")),
                     divider="gray")
    with delete.popover("Delete", width="stretch", icon=":material/delete:"):
        render_delete(selected)
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
        render_upload(all_datasets)
    with paste:
        render_paste(selected)


with page_boundary(catalog.clear_dataset_readers):
    render_page()
