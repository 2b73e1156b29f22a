"""What the Rubrics page shows after a write: a one-time message and the rubric and version
to select on the next run (shared by the page and its editor and file modules)."""

from __future__ import annotations

import streamlit as st

from ui import safe_text

state = st.session_state


def flash(message: str, kind: str = "success", *, warning: str | None = None) -> None:
    """Say what happened after the next rerun; ``warning`` is shown under it when given."""
    state["rubrics_flash"] = (kind, message, warning)


def render_flash() -> None:
    if state["rubrics_flash"]:
        kind, message, warning = state["rubrics_flash"]
        state["rubrics_flash"] = None
        (st.success if kind == "success" else st.info)(safe_text.md(message))
        if warning:
            st.warning(safe_text.md(warning), icon=":material/warning:")


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
