"""Rubric files and versions: import a new rubric, export a version as YAML or JSON, update a
version from a file, and compare two versions."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from grading.errors import RubricValidationError
from grading.rubric import Rubric
from grading.rubric_io import ignored_fields_message
from storage.dto import RubricVersionInfo
from storage.errors import StorageError
from storage.export_names import file_stem
from storage.services import rubrics as service
from storage.services.rubric_diff import CriterionChange, WordRun, diff_criteria, word_diff
from ui import catalog, safe_text
from ui.auth import current_actor
from ui.boundary import plain
from ui.rubric_nav import flash, goto
from ui.runtime import database_key, get_sessions
from ui.wording import plural

state = st.session_state
MAX_IMPORT_BYTES = 2 * 1024 * 1024


def handle_import(name: str, upload, pasted: str) -> None:
    state["rubrics_import_problems"] = None
    read = _read_rubric_text(upload, pasted)
    if read is None:
        return
    text, filename = read
    typed = name.strip()
    try:
        rubric = Rubric.from_text(text, filename=filename)
    except RubricValidationError as exc:
        state["rubrics_import_problems"] = (None, filename or "pasted text",
                                            list(exc.problems))
        return
    # The name typed, else the one the file gives (``name:``), else the file's own name.
    name = typed or rubric.declared_name or (Path(filename).stem if filename else "")
    if not name:
        st.error("Give the imported rubric a name (or a `name:` in the file).")
        return
    try:
        version = service.create_rubric(get_sessions(), name, rubric, actor=current_actor())
    except StorageError as exc:
        st.error(plain(f"Could not import: {exc}."))
        return
    catalog.clear_rubric_readers()
    state["rubrics_editor_nonce"] += 1  # fresh forms and editor
    goto(version.rubric_id, version.id)
    criteria = plural(len(version.criteria), "criterion", "criteria")
    declared = rubric.declared_name
    how = (" (the name the file gives)" if not typed and declared
           else f" — the file calls it '{declared}'; the name you typed is used"
           if declared and declared != typed else "")
    flash(f"Imported '{version.rubric_name}'{how} with {criteria}.",
          warning=_ignored_warning(rubric, filename))
    st.rerun()


def name_not_used(rubric: Rubric, version: RubricVersionInfo) -> str:
    """Updating from a file keeps the rubric's name: say so when the file names it otherwise."""
    declared = rubric.declared_name
    if not declared or declared == version.rubric_name:
        return ""
    return (f" The file's name '{declared}' is not used: the rubric keeps its name "
            f"'{version.rubric_name}'.")


def _ignored_warning(rubric: Rubric, filename: str | None) -> str | None:
    """Tell the person which of their file's fields the workbench did not keep."""
    if not rubric.ignored_fields:
        return None
    return (ignored_fields_message(rubric.ignored_fields, filename or "the pasted text")
            + ". They are not part of the saved rubric; if one of them matters, rename it to "
            "a criterion field or put it into the requirement text.")


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
        st.info(plain(f"No changes: the file matches version {version.number}."
                      + name_not_used(rubric, version)))
        warning = _ignored_warning(rubric, filename)
        if warning:
            st.warning(safe_text.md(warning), icon=":material/warning:")
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
          f"{counts['removed']} removed, {counts['changed']} changed."
          + name_not_used(rubric, version),
          warning=_ignored_warning(rubric, filename))
    st.rerun()


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
                   f"Fix {'it' if len(problems) == 1 else 'them'} and import again."))
    st.dataframe(pd.DataFrame({"Problem": problems}), hide_index=True, width="stretch")


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
        {"Change": change.kind, "Criterion": safe_text.text(change.label),
         "Old weight": None if change.old is None else change.old.weight,
         "New weight": None if change.new is None else change.new.weight,
         "Details": safe_text.text("; ".join(change.details)),
         "Requirement": safe_text.text((change.new or change.old).requirement)}
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
    render_rewordings(diff.changes)


def marked_wording(runs: tuple[WordRun, ...], side: str) -> str:
    """One side of a reworded requirement as markdown: the words kept as they are, the
    words only on this side marked (struck through in red when removed, bold on green when
    added). Every word is escaped: requirements are people's text."""
    parts = []
    for run in runs:
        if run.kind == "same":
            parts.append(safe_text.md(run.text))
        elif run.kind == side == "removed":
            parts.append(f":red-background[~~{safe_text.md(run.text)}~~]")
        elif run.kind == side == "added":
            parts.append(f":green-background[**{safe_text.md(run.text)}**]")
    return " ".join(parts)


def render_rewordings(changes: tuple[CriterionChange, ...]) -> None:
    """Old and new wording, in full, of every criterion whose requirement changed."""
    reworded = [c for c in changes if c.kind == "changed" and c.old.requirement
                != c.new.requirement]
    if not reworded:
        return
    st.markdown("**Reworded requirements** — removed words struck through, added words "
                "in bold")
    for change in reworded:
        runs = word_diff(change.old.requirement, change.new.requirement)
        with st.container(border=True):
            st.markdown(f"**{safe_text.md(change.label)}**")
            st.markdown(f"Old: {marked_wording(runs, 'removed')}")
            st.markdown(f"New: {marked_wording(runs, 'added')}")


def render_export(version: RubricVersionInfo) -> None:
    url = database_key()
    yaml_text = catalog.get_export(url, version.id, "yaml")
    stem = file_stem(version.rubric_name, version=version.number)
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
