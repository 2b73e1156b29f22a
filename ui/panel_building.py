"""Judge panels still being filled by a worker (storage.jobs.panel_fills): said with their
progress where the pages would show their figures, followed until they are ready, then
the page is drawn again with them."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from storage.errors import NotFoundError
from storage.services import panels
from ui import panel_readers, runtime
from ui.boundary import plain

POLL_SECONDS = 2.0


def building_words(panel: panels.PanelInfo) -> str:
    assert panel.building is not None
    return (f"{panel.label} is being built: {panel.building.words}. Its figures appear here "
            "when it is ready; nothing partial is shown.")


def worker_words() -> str:
    """Who builds it: the app's worker, or (turned off here) a ``rubric-workbench worker``."""
    if runtime.ensure_worker():
        return "The app's background worker builds it; you can leave this page."
    return ("This app's background worker is turned off: start `rubric-workbench worker` "
            "against this database to build it.")


def render_building(db: str, building: Sequence[panels.PanelInfo]) -> None:
    """Each panel's progress, polled (drawn where it is called); once one is ready the whole
    page is drawn again."""
    if not building:
        return
    ids = tuple(p.id for p in building)

    @st.fragment(run_every=POLL_SECONDS)
    def follow() -> None:
        sessions = runtime.sessions_for(db)
        try:
            now = [panels.get_panel(sessions, pid) for pid in ids]  # uncached: the poll
        except NotFoundError:  # deleted meanwhile (another tab): the page without it
            now = None
        if now is None or any(p.ready for p in now):
            panel_readers.clear_after_panel_change()
            st.rerun()
        for panel in now:
            st.info(plain(building_words(panel)))
        st.caption(worker_words())

    follow()


def split(found: Sequence[panels.PanelInfo]
          ) -> tuple[list[panels.PanelInfo], list[panels.PanelInfo]]:
    """(ready, being built)."""
    return [p for p in found if p.ready], [p for p in found if not p.ready]
