"""Editing a rubric version's criteria: the table editor with per-row problems and a live
summary, the read-only view of a frozen version, and saving."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from grading.errors import RubricValidationError
from grading.types import Criterion
from storage.dto import RubricVersionInfo
from storage.errors import StorageError
from storage.services import rubrics as service
from ui import catalog, safe_text
from ui.auth import current_actor
from ui.boundary import count, plain
from ui.criteria_table import Summary, from_frame, marked_frame, summarize
from ui.option_editor import render_options, render_preview
from ui.option_presets import KINDS
from ui.rubric_nav import flash, goto
from ui.runtime import get_sessions
from ui.wording import plural

state = st.session_state

CRITERIA_COLUMNS = {
    "position": st.column_config.NumberColumn(
        "#", help="Order of the criteria: change the numbers to reorder", step=1, width=40),
    # Every column shows at 1280 pixels beside the sidebar (about 800 pixels of table).
    "kind": st.column_config.TextColumn(
        "Kind", width=70,
        help="penalty: a negative weight, subtracted when met. Shows the saved weights; the "
             "Penalties line under the table follows unsaved edits."),
    "name": st.column_config.TextColumn("Name", help="Short unique name (optional)",
                                        width=105),
    "requirement": st.column_config.TextColumn(
        "Requirement", help="What the response must do (or, for a penalty, must not do)",
        width=213),
    "weight": st.column_config.NumberColumn(
        "Weight", help="Positive: points earned when met. Negative: a penalty when met.",
        format="%g", width=74),
    "section": st.column_config.TextColumn("Section", help="Optional grouping",
                                           width=85),
    "judged_as": st.column_config.SelectboxColumn(
        "Judged as", options=list(KINDS), required=True, default=KINDS[0], width=95,
        help="MET/UNMET; a rating on an ordered scale; or a choice among categories. "
             "Options of ratings and categories are edited below the table."),
    "required": st.column_config.CheckboxColumn(
        "Required", width=82, default=False,
        help="A gate: a response that fails this criterion gets the gate's score"),
    "options": st.column_config.TextColumn("Options", width=220),
}


def handle_save(version: RubricVersionInfo, criteria, note: str, expected) -> None:
    try:
        saved = service.save_criteria(get_sessions(), version.id, criteria, note=note.strip(),
                                      expected=expected, actor=current_actor())
    except (RubricValidationError, StorageError) as exc:
        st.error(plain(f"Nothing was saved: {exc}"))
        return
    catalog.clear_rubric_readers()
    state["rubrics_editor_nonce"] += 1
    goto(saved.rubric_id, saved.id)
    if saved.id != version.id:
        flash(f"Saved as version {saved.number}. Version {version.number} is unchanged.")
    else:
        flash(f"Saved {plural(len(criteria), 'criterion', 'criteria')} in version "
              f"{saved.number}.")
    st.rerun()


def unlock(version_id: int) -> None:
    state["rubrics_unlocked_version_id"] = version_id


def discard() -> None:
    state["rubrics_editor_nonce"] += 1
    state["rubrics_unlocked_version_id"] = None


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
        f"{plural(summary.criteria_count, 'criterion', 'criteria')}"
        + (f" in {count(summary.section_count, 'section')}" if summary.section_count else "")
        + f", {summary.penalty_count} of them penalties. "
        f"A response judged MET (or given the highest-valued option) on every criterion, "
        f"penalties included, scores "
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
    shown = marked_frame(version.criteria)
    for column in ("name", "requirement", "section", "options"):
        shown[column] = shown[column].map(safe_text.text)
    st.dataframe(_penalties_in_red(shown), hide_index=True,
                 width="stretch", column_config=CRITERIA_COLUMNS,
                 column_order=["position", "name", "requirement", "weight", "kind",
                               "judged_as", "required", "options", "section"])
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
    editor_key = f"rubrics_editor_{version.id}_{state['rubrics_editor_nonce']}"
    # What this edit started from: saving refuses when the draft changed meanwhile.
    expected = state.setdefault(f"{editor_key}_base", version.to_criteria())
    stale = not version.frozen and expected != version.to_criteria()
    if stale:
        st.warning(f"Version {version.number} was saved elsewhere (another tab or person) "
                   "since you started editing. The table shows what was saved there; saving "
                   "here is off so that it is not overwritten. Press 'Discard changes' to "
                   "edit from the saved criteria.", icon=":material/sync_problem:")
    edited = st.container(key="rubrics_criteria").data_editor(
        marked_frame(version.criteria).drop(columns=["options"]),
        key=editor_key,
        num_rows="dynamic", hide_index=True, width="stretch", placeholder="",
        column_config=CRITERIA_COLUMNS,
        column_order=["position", "name", "requirement", "weight", "kind", "judged_as",
                      "required", "section"],
        disabled=["kind"],
    )
    options = render_options(version, editor_key, edited)
    criteria, problems = from_frame(edited, options)
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        st.error(f"{len(problems)} {noun} to fix before saving — nothing has been saved.")
        st.dataframe(
            pd.DataFrame([{"Row": p.row, "Criterion": safe_text.text(p.label), "Column": p.field,
                           "Problem": p.message} for p in problems]),
            hide_index=True, width="stretch",
        )
    elif criteria:
        penalties = [c for c in criteria if c.weight < 0]
        if penalties:
            st.markdown("**Penalties:** " + " ".join(
                f":red-badge[:material/remove_circle: {_badge_text(c)}]" for c in penalties))
        render_summary(summarize(criteria))
        render_preview(criteria)
    changed = criteria != version.to_criteria()
    left, middle, _ = st.columns([3, 1, 1])
    note = left.text_input("Change note (optional)", key=f"rubrics_note_{version.id}",
                           placeholder="What changed and why")
    save_label = "Save as new version" if version.frozen else "Save criteria"
    if middle.button(save_label, type="primary", disabled=bool(problems) or not changed or stale,
                     key="rubrics_save", width="stretch"):
        handle_save(version, criteria, note, None if version.frozen else expected)
    if changed or version.frozen or stale:
        st.button("Discard changes", on_click=discard, key="rubrics_discard")
    if not changed and not problems and not version.frozen:
        st.caption("No unsaved changes.")
