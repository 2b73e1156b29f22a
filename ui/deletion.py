"""Deleting a rubric or a dataset, or archiving it instead: the same rule on both pages.

People's verdicts are never deleted, so something that holds them offers only "Archive
instead"; otherwise the delete says what goes with it and needs a tick first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from storage.dto import DeletionSummary
from storage.errors import HumanVerdictsExistError
from ui.boundary import count, plain

T = TypeVar("T")


def render_delete_or_archive(
    *, kind: str, name: str, item_id: int, archived: bool, summary: DeletionSummary,
    holds: str, page: str, on_archive: Callable[[], None], on_delete: Callable[[], None],
) -> None:
    """``holds``: what else goes besides runs and grades (e.g. "3 versions"); ``page``
    prefixes the widget keys."""
    if summary.human_verdicts:
        st.markdown(plain(
            f"'{name}' has {count(summary.human_verdicts, 'human verdict')}. "
            f"People's verdicts are never deleted, so this {kind} cannot be deleted. "
            "Archiving hides it from lists and can be undone."))
        if archived:
            st.caption("It is archived already.")
        elif st.button("Archive instead", key=f"{page}_archive_instead", type="primary",
                       icon=":material/archive:"):
            on_archive()
        return
    parts = [count(summary.runs, 'grading run'), count(summary.grades, 'grade')]
    if summary.comparisons:
        parts.append(count(summary.comparisons, 'comparison'))
    if summary.panels:
        parts.append(count(summary.panels, 'judge panel'))
    if summary.pair_panels:
        parts.append(count(summary.pair_panels, 'panel') + " of pairwise judges")
    st.markdown(plain(f"Deletes '{name}', its {holds}, {', '.join(parts[:-1])} and "
                      f"{parts[-1]}. This cannot be undone."))
    sure = st.checkbox("Yes, delete it for good", key=f"{page}_delete_sure_{item_id}")
    if st.button(f"Delete {kind}", type="primary", disabled=not sure, key=f"{page}_delete"):
        on_delete()


def delete_or_explain(name: str, delete: Callable[[], T],
                      clear_summary: Callable[[], None]) -> T | None:
    """What ``delete`` returns; None, after saying why, when someone reviewed a response
    since the confirmation was drawn."""
    try:
        return delete()
    except HumanVerdictsExistError:
        clear_summary()
        st.error(plain(f"Not deleted: '{name}' now has human verdicts, and people's "
                       "verdicts are never deleted. Archive it to hide it from lists."))
        return None
