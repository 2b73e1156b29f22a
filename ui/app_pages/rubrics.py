"""Rubrics: list, create, import, rename, archive; edit criteria; versions, diff, export."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from grading.errors import RubricValidationError
from grading.rubric import Rubric
from grading.types import Criterion
from storage.dto import RubricInfo, RubricVersionInfo
from storage.errors import HumanVerdictsExistError, StorageError
from storage.services import rubrics as service
from storage.services.rubric_diff import diff_criteria
from ui import catalog
from ui.auth import current_actor
from ui.boundary import count, page_boundary, plain
from ui.criteria_table import Summary, from_frame, marked_frame, summarize
from ui.runtime import database_key, get_sessions

state = st.session_state
MAX_IMPORT_BYTES = 2 * 1024 * 1024

CRITERIA_COLUMNS = {
    "position": st.column_config.NumberColumn(
        "#", help="Order of the criteria: change the numbers to reorder", step=1, width=50),
    "kind": st.column_config.TextColumn(
        "Kind", width="small",
        help="penalty: a negative weight, subtracted when met. Shows the saved weights; the "
             "Penalties line under the table follows unsaved edits."),
    "name": st.column_config.TextColumn("Name", help="Short unique name (optional)",
                                        width="medium"),
    "requirement": st.column_config.TextColumn(
        "Requirement", help="What the response must do (or, for a penalty, must not do)",
        width="large"),
    "weight": st.column_config.NumberColumn(
        "Weight", help="Positive: points earned when met. Negative: a penalty when met.",
        format="%g", width="small"),
    "section": st.column_config.TextColumn("Section", help="Optional grouping",
                                           width="small"),
}


def flash(message: str, kind: str = "success") -> None:
    state["rubrics_flash"] = (kind, message)


def render_flash() -> None:
    if state["rubrics_flash"]:
        kind, message = state["rubrics_flash"]
        state["rubrics_flash"] = None
        (st.success if kind == "success" else st.info)(plain(message))


def goto(rubric_id: int, version_id: int | None = None) -> None:
    state["rubrics_goto"] = (rubric_id, version_id)


def apply_goto() -> None:
    """Select what a write asked for, before the pickers are drawn."""
    if state["rubrics_goto"]:
        rubric_id, version_id = state["rubrics_goto"]
        state["rubrics_goto"] = None
        state["rubrics_selected_id"] = rubric_id
        state["rubrics_version_id"] = version_id
        state["rubrics_unlocked_version_id"] = None


def version_label(version: RubricVersionInfo, latest_id: int) -> str:
    status = (f"frozen {version.frozen_at:%Y-%m-%d}" if version.frozen
              else "draft, editable")
    latest = " · latest" if version.id == latest_id else ""
    note = f" — {version.note}" if version.note else ""
    by = f" · by {version.created_by}" if version.created_by else ""
    return f"v{version.number} · {status}{latest}{by}{note}"


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


def handle_import(name: str, upload, pasted: str) -> None:
    state["rubrics_import_problems"] = None
    read = _read_rubric_text(upload, pasted)
    if read is None:
        return
    text, filename = read
    name = name.strip() or (Path(filename).stem if filename else "")
    if not name:
        st.error("Give the imported rubric a name.")
        return
    try:
        version = service.import_rubric(get_sessions(), name, text, filename=filename,
                                        actor=current_actor())
    except RubricValidationError as exc:
        state["rubrics_import_problems"] = (None, filename or "pasted text",
                                            list(exc.problems))
        return
    except StorageError as exc:
        st.error(plain(f"Could not import: {exc}."))
        return
    catalog.clear_rubric_readers()
    state["rubrics_editor_nonce"] += 1  # fresh forms and editor
    goto(version.rubric_id, version.id)
    flash(f"Imported '{version.rubric_name}' with {len(version.criteria)} criteria.")
    st.rerun()


def _read_rubric_text(upload, pasted: str) -> tuple[str, str | None] | None:
    """The text to import and its file name, or None after saying what is wrong."""
    if upload is None and not pasted.strip():
        st.error("Choose a file or paste the rubric's YAML or JSON, then import.")
        return None
    if upload is None:
        return pasted, None
    data = upload.getvalue()
    if len(data) > MAX_IMPORT_BYTES:
        st.error(plain(f"{upload.name} is {len(data) / 1e6:.1f} MB; a rubric file is at "
                       f"most {MAX_IMPORT_BYTES // (1024 * 1024)} MB. Is this the right "
                       "file?"))
        return None
    try:
        return data.decode("utf-8-sig"), upload.name
    except UnicodeDecodeError:
        st.error(plain(f"{upload.name} is not UTF-8 text. Save it as UTF-8 and import "
                       "it again."))
        return None


def handle_update_from_file(version: RubricVersionInfo, upload, pasted: str) -> None:
    state["rubrics_import_problems"] = None
    read = _read_rubric_text(upload, pasted)
    if read is None:
        return
    text, filename = read
    try:
        rubric = Rubric.from_text(text, filename=filename)
    except RubricValidationError as exc:
        state["rubrics_import_problems"] = (version.id, filename or "pasted text",
                                            list(exc.problems))
        return
    changes = diff_criteria(version.to_criteria(), rubric.criteria)
    if all(change.kind == "unchanged" for change in changes):
        st.info(f"No changes: the file matches version {version.number}.")
        return
    try:
        saved = service.save_criteria(get_sessions(), version.id, rubric,
                                      note=f"updated from {filename or 'pasted text'}",
                                          actor=current_actor())
    except StorageError as exc:
        st.error(plain(f"Nothing was saved: {exc}"))
        return
    catalog.clear_rubric_readers()
    state["rubrics_editor_nonce"] += 1
    goto(saved.rubric_id, saved.id)
    counts = {kind: sum(1 for c in changes if c.kind == kind)
              for kind in ("added", "removed", "changed")}
    flash(f"Version {saved.number} now holds the file's criteria: {counts['added']} added, "
          f"{counts['removed']} removed, {counts['changed']} changed.")
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
    try:
        removed = service.delete_rubric(get_sessions(), rubric.id, confirm=True,
                                        actor=current_actor())
    except HumanVerdictsExistError as exc:
        st.error(plain(f"Not deleted: {exc}. People's verdicts are never deleted from here; "
                       "archive the rubric to hide it."))
        return
    # Its runs, results, reviews and agreement figures are gone too: every reader changes.
    st.cache_data.clear()
    flash(f"Deleted '{rubric.name}' with {count(rubric.version_count, 'version')}, "
          f"{count(removed.runs, 'grading run')} and {count(removed.grades, 'grade')}.", "info")
    st.rerun()


def handle_freeze(version: RubricVersionInfo) -> None:
    service.freeze_version(get_sessions(), version.id, actor=current_actor())
    catalog.clear_rubric_readers()
    flash(f"Version {version.number} is frozen: it will never change. "
          "Edits now create a new version.")
    st.rerun()


def handle_save(version: RubricVersionInfo, criteria, note: str) -> None:
    try:
        saved = service.save_criteria(get_sessions(), version.id, criteria, note=note.strip(),
                                      actor=current_actor())
    except (RubricValidationError, StorageError) as exc:
        st.error(plain(f"Nothing was saved: {exc}"))
        return
    catalog.clear_rubric_readers()
    state["rubrics_editor_nonce"] += 1
    goto(saved.rubric_id, saved.id)
    if saved.id != version.id:
        flash(f"Saved as version {saved.number}. Version {version.number} is unchanged.")
    else:
        flash(f"Saved {len(criteria)} criteria in version {saved.number}.")
    st.rerun()


def unlock(version_id: int) -> None:
    state["rubrics_unlocked_version_id"] = version_id


def discard() -> None:
    state["rubrics_editor_nonce"] += 1
    state["rubrics_unlocked_version_id"] = None


# -- drawing ---------------------------------------------------------------------------------
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


def render_import() -> None:
    with st.expander("Import YAML or JSON", icon=":material/upload_file:"):
        st.caption("A list of criteria, `{criteria: [...]}` or `{sections: [{name, criteria}]}`;"
                   " each criterion has `requirement`, `weight` and optionally `name`.")
        with st.form(f"rubrics_import_form_{state['rubrics_editor_nonce']}"):
            name = st.text_input("Name for the imported rubric",
                                 placeholder="Defaults to the file name")
            upload = st.file_uploader("Rubric file", type=["yaml", "yml", "json"],
                                      max_upload_size=MAX_IMPORT_BYTES // (1024 * 1024))
            pasted = st.text_area("…or paste YAML or JSON", height=150)
            if st.form_submit_button("Import"):
                handle_import(name, upload, pasted)
        if state["rubrics_import_problems"] and state["rubrics_import_problems"][0] is None:
            render_import_problems(*state["rubrics_import_problems"][1:])


def render_import_problems(source: str, problems: list[str]) -> None:
    noun = "problem" if len(problems) == 1 else "problems"
    st.error(plain(f"Nothing was imported: {source} has {len(problems)} {noun}. "
                   "Fix them and import again."))
    st.dataframe(pd.DataFrame({"Problem": problems}), hide_index=True, width="stretch")


def render_summary(summary: Summary) -> None:
    cols = st.columns(4)
    cols[0].metric("Positive weight", f"{summary.positive_weight:g}",
                   help="Sum of the weights a response can earn")
    cols[1].metric("Penalty weight", f"{summary.penalty_weight:g}",
                   help=f"Sum of the {summary.penalty_count} penalties (negative weights)")
    cols[2].metric("Best response", _score(summary.best),
                   help="Meets every positive criterion and triggers no penalty")
    cols[3].metric("Worst response", _score(summary.worst),
                   help="Meets no positive criterion and triggers every penalty")
    st.caption(
        f"{summary.criteria_count} criteria"
        + (f" in {count(summary.section_count, 'section')}" if summary.section_count else "")
        + f", {summary.penalty_count} of them penalties. "
        f"A response judged MET on every criterion, penalties included, scores "
        f"{_score(summary.all_met)}. Raw sums: best {_raw(summary.best)}, "
        f"worst {_raw(summary.worst)}."
    )


def _badge_text(criterion: Criterion) -> str:
    # Badge text is markdown: keep only characters that cannot open markup.
    label = criterion.name or criterion.requirement[:40]
    safe = "".join(ch for ch in label if ch.isalnum() or ch in " _-.,")
    return f"{safe} {criterion.weight:g}"


def _score(aggregate) -> str:
    return "—" if aggregate.score is None else f"{aggregate.score:.2f}"


def _raw(aggregate) -> str:
    return "—" if aggregate.raw_score is None else f"{aggregate.raw_score:g}"


def render_read_only(version: RubricVersionInfo) -> None:
    st.info(f"Version {version.number} is frozen: grading runs refer to it, so it never "
            "changes. To change it, edit a copy that will be saved as a new version.")
    st.button("Edit as new version", on_click=unlock, args=(version.id,),
              key="rubrics_unlock", icon=":material/edit:")
    st.dataframe(_penalties_in_red(marked_frame(version.criteria)), hide_index=True,
                 width="stretch", column_config=CRITERIA_COLUMNS)
    render_summary(summarize(version.to_criteria()))


def _penalties_in_red(frame: pd.DataFrame):
    def color(row):
        red = "color: #b3261e; font-weight: 600" if row["weight"] < 0 else ""
        return [red if column in ("kind", "weight") else "" for column in row.index]

    return frame.style.apply(color, axis=1)


def render_editor(version: RubricVersionInfo) -> None:
    if version.frozen:
        st.info(f"Editing a copy of frozen version {version.number}. Saving creates a new "
                f"version; version {version.number} stays as it is.")
    st.caption("Double-click a cell to edit it. Add a criterion in the empty row at the bottom; "
               "delete one by selecting its row (left edge) and pressing Delete; reorder by "
               "changing the # numbers. A negative weight makes the criterion a penalty.")
    edited = st.container(key="rubrics_criteria").data_editor(
        marked_frame(version.criteria),
        key=f"rubrics_editor_{version.id}_{state['rubrics_editor_nonce']}",
        num_rows="dynamic", hide_index=True, width="stretch", placeholder="",
        column_config=CRITERIA_COLUMNS,
        column_order=["position", "name", "requirement", "weight", "kind", "section"],
        disabled=["kind"],
    )
    criteria, problems = from_frame(edited)
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        st.error(f"{len(problems)} {noun} to fix before saving — nothing has been saved.")
        st.dataframe(
            pd.DataFrame([{"Row": p.row, "Criterion": p.label, "Column": p.field,
                           "Problem": p.message} for p in problems]),
            hide_index=True, width="stretch",
        )
    elif criteria:
        penalties = [c for c in criteria if c.weight < 0]
        if penalties:
            st.markdown("**Penalties:** " + " ".join(
                f":red-badge[:material/remove_circle: {_badge_text(c)}]" for c in penalties))
        render_summary(summarize(criteria))
    changed = criteria != version.to_criteria()
    left, middle, _ = st.columns([3, 1, 1])
    note = left.text_input("Change note (optional)", key=f"rubrics_note_{version.id}",
                           placeholder="What changed and why")
    save_label = "Save as new version" if version.frozen else "Save criteria"
    if middle.button(save_label, type="primary", disabled=bool(problems) or not changed,
                     key="rubrics_save", width="stretch"):
        handle_save(version, criteria, note)
    if changed or version.frozen:
        st.button("Discard changes", on_click=discard, key="rubrics_discard")
    if not changed and not problems and not version.frozen:
        st.caption("No unsaved changes.")


def render_versions(versions: list[RubricVersionInfo]) -> None:
    if len(versions) < 2:
        st.info("Only one version so far. Versions are created when you save changes to a "
                "frozen version; then you can compare them here.")
        return
    ids = [v.id for v in versions]  # newest first
    by_id = {v.id: v for v in versions}
    if state["rubrics_diff_new"] not in ids:
        state["rubrics_diff_new"] = ids[0]
    if state["rubrics_diff_old"] not in ids:
        state["rubrics_diff_old"] = ids[1]
    left, right = st.columns(2)
    left.selectbox("Older version", ids, key="rubrics_diff_old",
                   format_func=lambda i: f"v{by_id[i].number}")
    right.selectbox("Newer version", ids, key="rubrics_diff_new",
                    format_func=lambda i: f"v{by_id[i].number}")
    old_id, new_id = state["rubrics_diff_old"], state["rubrics_diff_new"]
    if old_id == new_id:
        st.caption("Pick two different versions to compare.")
        return
    diff = catalog.get_diff(database_key(), old_id, new_id)
    counts = diff.counts
    st.markdown(
        f"**v{diff.old.number} → v{diff.new.number}:** "
        f":green-badge[{counts['added']} added] :red-badge[{counts['removed']} removed] "
        f":orange-badge[{counts['changed']} changed] "
        f":gray-badge[{counts['unchanged']} unchanged]"
    )
    show_all = st.toggle("Show unchanged criteria", key="rubrics_diff_show_all")
    rows = [
        {"Change": change.kind, "Criterion": change.label,
         "Old weight": None if change.old is None else change.old.weight,
         "New weight": None if change.new is None else change.new.weight,
         "Details": "; ".join(change.details),
         "Requirement": (change.new or change.old).requirement}
        for change in diff.changes if show_all or change.kind != "unchanged"
    ]
    if not rows:
        st.caption("No differences.")
        return
    colors = {"added": "#e6f4ea", "removed": "#fce8e6", "changed": "#fff4e5"}
    table = pd.DataFrame(rows).style.apply(
        lambda row: [f"background-color: {colors.get(row['Change'], '')}"] * len(row), axis=1)
    st.dataframe(table, hide_index=True, width="stretch", placeholder="—",
                 column_config={"Old weight": st.column_config.NumberColumn(format="%g"),
                                "New weight": st.column_config.NumberColumn(format="%g")})


def render_export(version: RubricVersionInfo) -> None:
    url = database_key()
    yaml_text = catalog.get_export(url, version.id, "yaml")
    stem = f"{version.rubric_name}-v{version.number}".replace(" ", "_").replace("/", "_")
    left, right, _ = st.columns([1, 1, 3])
    left.download_button("Download YAML", yaml_text, file_name=f"{stem}.yaml",
                         mime="application/yaml", key="rubrics_download_yaml",
                         icon=":material/download:")
    right.download_button("Download JSON", catalog.get_export(url, version.id, "json"),
                          file_name=f"{stem}.json", mime="application/json",
                          key="rubrics_download_json", icon=":material/download:")
    with st.expander("Show the YAML"):
        st.code(yaml_text, language="yaml")
    render_update_from_file(version)


def render_update_from_file(version: RubricVersionInfo) -> None:
    st.markdown("**Update from a file** — for rubrics kept as YAML or JSON elsewhere. "
                + ("A new version is created; this one stays as it is." if version.frozen
                   else "The criteria of this draft are replaced."))
    with st.form(f"rubrics_update_form_{version.id}_{state['rubrics_editor_nonce']}"):
        upload = st.file_uploader("Updated rubric file", type=["yaml", "yml", "json"],
                                  max_upload_size=MAX_IMPORT_BYTES // (1024 * 1024))
        pasted = st.text_area("…or paste the updated YAML or JSON", height=120)
        submitted = st.form_submit_button("Update from file")
    if submitted:
        handle_update_from_file(version, upload, pasted)
    if state["rubrics_import_problems"] and state["rubrics_import_problems"][0] == version.id:
        render_import_problems(*state["rubrics_import_problems"][1:])


def render_rubric(rubric: RubricInfo) -> None:
    versions = sorted(catalog.get_versions(database_key(), rubric.id),
                      key=lambda v: v.number, reverse=True)
    ids = [v.id for v in versions]  # newest first
    if state["rubrics_version_id"] not in ids:
        state["rubrics_version_id"] = ids[0]
        state["rubrics_unlocked_version_id"] = None
    by_id = {v.id: v for v in versions}

    title = f"{rubric.name}" + ("  ·  archived" if rubric.archived else "")
    st.subheader(plain(title), divider="gray")
    if rubric.description:
        st.caption(plain(rubric.description))
    pick, rename, archive, freeze, delete = st.columns([3, 1, 1, 1, 1],
                                                       vertical_alignment="bottom")
    pick.selectbox("Version", ids, key="rubrics_version_id",
                   format_func=lambda i: version_label(by_id[i], ids[0]))
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
        st.markdown(plain(f"Deletes '{rubric.name}', its "
                          f"{count(rubric.version_count, 'version')} and every grading run "
                          "made with them. This cannot be "
                          "undone. A rubric with human verdicts can only be archived."))
        sure = st.checkbox("Yes, delete it for good", key=f"rubrics_delete_sure_{rubric.id}")
        if st.button("Delete rubric", type="primary", disabled=not sure, key="rubrics_delete"):
            handle_delete(rubric)
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
        format_func=lambda i: by_id[i].name + (" (archived)" if by_id[i].archived else "")
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
