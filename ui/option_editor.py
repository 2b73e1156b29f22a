"""The Rubrics editor's options: for each rating or category criterion its options (label,
value, NA) with presets to start from, and a preview of the prompt the judge receives."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from grading.option_prompts import option_order, option_user_prompt
from grading.types import Criterion
from storage.dto import RubricVersionInfo
from ui import safe_text
from ui.option_presets import BINARY, DEFAULT_PRESET, PRESETS, option_rows

state = st.session_state
PREVIEW_RESPONSE = "(the response being graded appears here)"

OPTION_COLUMNS = {
    "label": st.column_config.TextColumn("Label", help="What the judge chooses", width=260),
    "value": st.column_config.NumberColumn(
        "Value", format="%.3g", width=90,
        help="0 to 1: the share of the criterion's weight this option earns"),
    "na": st.column_config.CheckboxColumn(
        "NA", width=60, help="Not applicable / cannot assess: scored like CANNOT_ASSESS"),
}


def _keys(editor_key: str) -> tuple[str, str]:
    return f"{editor_key}_option_base", f"{editor_key}_option_gen"


def _start(version: RubricVersionInfo, editor_key: str) -> None:
    base_key, gen_key = _keys(editor_key)
    if base_key not in state:
        state[base_key] = {index: option_rows(c.options)
                           for index, c in enumerate(version.criteria) if c.options is not None}
        state[gen_key] = {}


def use_preset(editor_key: str, row: Any) -> None:
    """Replace a criterion's options by the chosen preset (a fresh options table)."""
    base_key, gen_key = _keys(editor_key)
    preset = state[f"{editor_key}_preset_{row}"]
    state[base_key][row] = option_rows(PRESETS[preset])
    state[gen_key][row] = state[gen_key].get(row, 0) + 1


def render_options(version: RubricVersionInfo, editor_key: str,
                   edited: pd.DataFrame) -> dict[Any, list[dict]]:
    """An options table for every rating or category row of the edited criteria; the rows
    each one holds now, by the criteria table's index label."""
    _start(version, editor_key)
    base_key, gen_key = _keys(editor_key)
    rows: dict[Any, list[dict]] = {}
    choosing = [(number, row, record) for number, (row, record)
                in enumerate(edited.iterrows(), start=1)
                if record.get("judged_as") not in (None, BINARY)
                and not pd.isna(record.get("judged_as"))]
    if not choosing:
        return rows
    st.markdown("**Options** — a rating or category criterion is judged by choosing one "
                "option; the option earns its value × the weight.")
    for number, row, record in choosing:
        kind = record["judged_as"]
        if row not in state[base_key]:
            state[base_key][row] = option_rows(PRESETS[DEFAULT_PRESET[kind]])
        name = record.get("name") if isinstance(record.get("name"), str) else ""
        requirement = record.get("requirement")
        title = name or (requirement[:50] if isinstance(requirement, str) else "") or "new row"
        with st.expander(f"Row {number} · {safe_text.text(title)} · {kind} options",
                         expanded=True):
            pick, apply, _ = st.columns([2, 1, 2], vertical_alignment="bottom")
            pick.selectbox("Preset", list(PRESETS), key=f"{editor_key}_preset_{row}")
            apply.button("Use preset", key=f"{editor_key}_use_preset_{row}",
                         on_click=use_preset, args=(editor_key, row),
                         help="Replaces this criterion's options with the preset")
            frame = pd.DataFrame(state[base_key][row], columns=["label", "value", "na"])
            edited_options = st.data_editor(
                frame.astype({"value": "float64", "na": "boolean"}),
                key=f"{editor_key}_options_{row}_{state[gen_key].get(row, 0)}",
                num_rows="dynamic", hide_index=True, column_config=OPTION_COLUMNS,
                placeholder="")
        rows[row] = edited_options.to_dict("records")
    return rows


def render_preview(criteria: list[Criterion]) -> None:
    """The user message a judge receives for one rating or category criterion."""
    choosing = [c for c in criteria if c.options is not None]
    if not choosing:
        return
    with st.expander("Preview the judge's prompt", icon=":material/visibility:"):
        labels = [c.name or c.requirement[:60] for c in choosing]
        picked = st.selectbox("Criterion", range(len(choosing)), key="rubrics_preview_pick",
                              format_func=lambda i: safe_text.text(labels[i]))
        criterion = choosing[picked if picked is not None and picked < len(choosing) else 0]
        st.code(option_user_prompt(criterion, PREVIEW_RESPONSE,
                                   order=option_order(criterion, shuffle=False)),
                language=None, wrap_lines=True)
