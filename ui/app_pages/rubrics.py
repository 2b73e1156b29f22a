"""Rubrics: list, create, rename, archive, freeze and delete; the selected rubric's criteria
(ui.rubric_editor), versions and files (ui.rubric_files)."""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from grading.types import Criterion
from storage.dto import RubricInfo, RubricVersionInfo
from storage.errors import StorageError
from storage.services import rubrics as service
from ui import catalog, deletion, safe_text
from ui.auth import current_actor
from ui.boundary import count, page_boundary, plain
from ui.rubric_editor import render_editor, render_read_only
from ui.rubric_files import render_export, render_import, render_versions
from ui.rubric_nav import apply_goto, flash, goto, render_flash
from ui.runtime import database_key, get_sessions, sessions_for

state = st.session_state


@st.cache_data(ttl=5, max_entries=20, show_spinner=False)
def get_deletion_summary(db: str, rubric_id: int):
    """Short TTL: a reviewer elsewhere may add the first human verdict at any time."""
    return service.deletion_summary(sessions_for(db), rubric_id)


def version_label(version: RubricVersionInfo, latest_id: int) -> str:
    status = (f"frozen {version.frozen_at:%Y-%m-%d}" if version.frozen
              else "draft, editable")
    latest = " · latest" if version.id == latest_id else ""
    note = f" — {version.note}" if version.note else ""
    by = f" · by {version.created_by}" if version.created_by else ""
    return f"v{version.number} · {status}{latest}{by}{note}"


def _picked_by_label(picked: object, versions: list[RubricVersionInfo]) -> int | None:
    """The version a picker value names when the browser sent its label instead of its id:
    the label changed since it was drawn (frozen in another tab, no longer the latest)."""
    found = re.match(r"v(\d+) ·", picked) if isinstance(picked, str) else None
    if found is None:
        return None
    return next((v.id for v in versions if v.number == int(found.group(1))), None)


# -- handlers --------------------------------------------------------------------------------
def handle_create(name: str, description: str, requirement: str, weight: float) -> None:
    if not requirement.strip():
        st.error("Write the first criterion's requirement: what a good response does.")
        return
    criterion = Criterion(requirement=requirement, weight=weight)
    try:
        version = service.create_rubric(get_sessions(), name, [criterion],
                                        description=description.strip(), actor=current_actor())
    except StorageError as exc:
        st.error(plain(f"Could not create the rubric: {exc}."))
        return
    catalog.clear_rubric_readers()
    state["rubrics_editor_nonce"] += 1  # fresh forms and editor
    goto(version.rubric_id, version.id)
    flash(f"Created '{version.rubric_name}'. Add the rest of its criteria in the table below.")
    st.rerun()


def handle_rename(rubric: RubricInfo, name: str) -> None:
    try:
        service.rename_rubric(get_sessions(), rubric.id, name, actor=current_actor())
    except StorageError as exc:
        st.error(plain(f"Could not rename: {exc}."))
        return
    catalog.clear_rubric_readers()
    flash(f"Renamed to '{name.strip()}'.")
    st.rerun()


def handle_archive(rubric: RubricInfo, archived: bool) -> None:
    service.archive_rubric(get_sessions(), rubric.id, archived, actor=current_actor())
    catalog.clear_rubric_readers()
    if archived:
        flash(f"Archived '{rubric.name}'. Turn on 'Show archived' to see or restore it.", "info")
    else:
        flash(f"Restored '{rubric.name}'.")
        goto(rubric.id)
    st.rerun()


def handle_delete(rubric: RubricInfo) -> None:
    removed = deletion.delete_or_explain(
        rubric.name, lambda: service.delete_rubric(get_sessions(), rubric.id, confirm=True,
                                                   actor=current_actor()),
        get_deletion_summary.clear)
    if removed is None:
        return
    # Its runs, results, reviews and agreement figures are gone too: every reader changes.
    st.cache_data.clear()
    flash(f"Deleted '{rubric.name}' with {count(rubric.version_count, 'version')}, "
          f"{count(removed.runs, 'grading run')} and {count(removed.grades, 'grade')}.", "info")
    st.rerun()


def render_delete(rubric: RubricInfo) -> None:
    """Only what can be done: a rubric with people's verdicts can be archived, not deleted."""
    deletion.render_delete_or_archive(
        kind="rubric", name=rubric.name, item_id=rubric.id, archived=rubric.archived,
        summary=get_deletion_summary(database_key(), rubric.id),
        holds=count(rubric.version_count, "version"), page="rubrics",
        on_archive=lambda: handle_archive(rubric, True),
        on_delete=lambda: handle_delete(rubric))


def handle_freeze(version: RubricVersionInfo) -> None:
    service.freeze_version(get_sessions(), version.id, actor=current_actor())
    catalog.clear_rubric_readers()
    # The version picker's label changes ("draft" -> "frozen"); the browser keeps the old
    # label as the picker's value and sends it back with the next click, which matched no
    # version: the page fell back to the newest version and dropped "edit as new version".
    # Setting the picker from here sends the browser the new label.
    goto(version.rubric_id, version.id)
    flash(f"Version {version.number} is frozen: it will never change. "
          "Edits now create a new version.")
    st.rerun()


def render_create(expanded: bool) -> None:
    with (st.expander("New rubric", expanded=expanded, icon=":material/add:"),
          st.form(f"rubrics_create_form_{state['rubrics_editor_nonce']}")):
        name = st.text_input("Name", placeholder="e.g. Support replies: refunds")
        description = st.text_input("Description (optional)")
        st.markdown("**First criterion** — you can add the others in the table afterwards.")
        left, right = st.columns([4, 1])
        requirement = left.text_input(
            "Requirement", placeholder="e.g. States the refund time frame correctly")
        weight = right.number_input("Weight", value=10.0, step=1.0, format="%g",
                                    help="Negative weights are penalties")
        if st.form_submit_button("Create rubric", type="primary"):
            if not name.strip():
                st.error("Give the rubric a name.")
            else:
                handle_create(name, description, requirement, weight)


def render_rubric(rubric: RubricInfo) -> None:
    versions = sorted(catalog.get_versions(database_key(), rubric.id),
                      key=lambda v: v.number, reverse=True)
    ids = [v.id for v in versions]  # newest first
    if state["rubrics_version_id"] not in ids:
        same = _picked_by_label(state["rubrics_version_id"], versions)
        state["rubrics_version_id"] = same or ids[0]
        if same is None:
            state["rubrics_unlocked_version_id"] = None
    by_id = {v.id: v for v in versions}

    title = f"{rubric.name}" + ("  ·  archived" if rubric.archived else "")
    st.subheader(plain(title), divider="gray")
    if rubric.description:
        st.caption(plain(rubric.description))
    # Wide enough at 1280 pixels for "Freeze version" and the other labels to show whole.
    pick, rename, archive, freeze, delete = st.columns([3.2, 1.3, 1.3, 1.9, 1.7],
                                                       vertical_alignment="bottom")
    pick.selectbox("Version", ids, key="rubrics_version_id",
                   format_func=lambda i: safe_text.text(version_label(by_id[i], ids[0])))
    version = by_id[state["rubrics_version_id"]]
    with rename.popover("Rename", width="stretch"), st.form("rubrics_rename_form"):
        new_name = st.text_input("New name", value=rubric.name)
        if st.form_submit_button("Rename"):
            handle_rename(rubric, new_name)
    if rubric.archived:
        if archive.button("Restore", width="stretch", key="rubrics_restore"):
            handle_archive(rubric, False)
    elif archive.button("Archive", width="stretch", key="rubrics_archive",
                        help="Hide it from lists; nothing is deleted"):
        handle_archive(rubric, True)
    with delete.popover("Delete", width="stretch", icon=":material/delete:"):
        render_delete(rubric)
    if version.frozen:
        freeze.button("Frozen", width="stretch", key="rubrics_frozen", disabled=True,
                      icon=":material/lock:", help="This version never changes")
    elif freeze.button("Freeze version", width="stretch", key="rubrics_freeze",
                       help="Lock this version; later edits create a new version"):
        handle_freeze(version)

    criteria_tab, versions_tab, export_tab = st.tabs(
        ["Criteria", f"Compare versions ({len(versions)})", "Export / update from file"])
    with criteria_tab:
        if version.frozen and state["rubrics_unlocked_version_id"] != version.id:
            render_read_only(version)
        else:
            render_editor(version)
    with versions_tab:
        render_versions(versions)
    with export_tab:
        render_export(version)


def render_page() -> None:
    st.title("Rubrics")
    st.caption("Weighted criteria a judge checks one by one. Positive weights earn points; "
               "negative weights are penalties for errors.")
    render_flash()
    apply_goto()
    rubrics = catalog.get_rubrics(database_key(), bool(state["rubrics_show_archived"]))
    render_create(expanded=not rubrics and not state["rubrics_show_archived"])
    render_import()

    pick, toggle = st.columns([4, 1], vertical_alignment="bottom")
    toggle.toggle("Show archived", key="rubrics_show_archived")
    if not rubrics:
        st.info("No rubrics yet. Create one above, import a YAML or JSON file, or load the "
                "sample rubric from the Start page.")
        st.page_link("app_pages/home.py", label="Go to the Start page", icon="🏠")
        return
    ids = [r.id for r in rubrics]
    by_id = {r.id: r for r in rubrics}
    if state["rubrics_selected_id"] not in ids:
        state["rubrics_selected_id"] = ids[0]
    pick.selectbox(
        "Rubric", ids, key="rubrics_selected_id",
        format_func=lambda i: safe_text.text(by_id[i].name)
        + (" (archived)" if by_id[i].archived else "")
        + f" — {by_id[i].version_count} version" + ("s" if by_id[i].version_count != 1 else ""),
    )
    render_list(rubrics)
    render_rubric(by_id[state["rubrics_selected_id"]])


def render_list(rubrics: list[RubricInfo]) -> None:
    with st.expander(f"All rubrics ({len(rubrics)})", icon=":material/list:"):
        st.dataframe(
            pd.DataFrame([{"Name": r.name, "Versions": r.version_count,
                           "Description": r.description, "Created": r.created_at,
                           "Archived": r.archived} for r in rubrics]),
            hide_index=True, width="stretch",
            column_config={"Created": st.column_config.DatetimeColumn(format="YYYY-MM-DD"),
                           "Archived": st.column_config.CheckboxColumn()},
        )


with page_boundary(catalog.clear_rubric_readers):
    render_page()
