"""The Compare page's form for a panel of pairwise judges: two or more finished comparisons
of the same two sources on one rubric version, each by its own judge."""

from __future__ import annotations

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.services import pair_panels
from storage.services.comparisons import ComparisonInfo
from ui import compare_readers, runtime, safe_text
from ui.auth import current_actor
from ui.boundary import plain


def member_label(c: ComparisonInfo) -> str:
    return (f"#{c.id} · {c.model} · {c.b_label} vs {c.a_label}"
            f"{' · holistic' if c.holistic else ''}")


def render_panel_form(every: list[ComparisonInfo]) -> None:
    """Pick the members and name the panel; the service says what is wrong with a pick."""
    finished = [c for c in every if c.finished and c.done_count]
    if len(finished) < 2:
        st.caption("A panel combines two or more finished comparisons of the same two "
                   f"sources by different judges; there {'is' if len(finished) == 1 else 'are'}"
                   f" {len(finished)} finished comparison{'' if len(finished) == 1 else 's'} "
                   "with judged pairs so far.")
        return
    labels = {c.id: safe_text.text(member_label(c)) for c in finished}
    s = st.session_state
    s.compare_panel_members = [i for i in s.compare_panel_members if i in labels]
    st.multiselect("Panel members", list(labels), key="compare_panel_members",
                   format_func=labels.get,
                   help="Finished comparisons of the same two sources (the same side each) on "
                        "the same rubric version, each by another judge")
    st.text_input("Panel name (optional)", key="compare_panel_name", max_chars=200)
    st.caption("Per pair and criterion, the panel's preference is what more than half of the "
               "judges that voted chose (A, B or tie); a split panel is a tie. The pair's "
               "result then goes through the same aggregation as one judge's.")
    few = len(s.compare_panel_members) < 2
    if few:
        st.caption("Pick two or more comparisons.")
    st.button("Make panel", key="compare_panel_make", disabled=few, on_click=handle_make)


def handle_make() -> None:
    """Make the panel (or find the one of the same members) and show it."""
    s = st.session_state
    try:
        made, created = pair_panels.ensure_pair_panel(
            runtime.get_sessions(), comparison_ids=list(s.compare_panel_members),
            name=s.compare_panel_name, actor=current_actor())
    except RubricWorkbenchError as exc:
        s.compare_flash = ("error", plain(f"No panel was made: {exc}"))
        compare_readers.clear()  # a member may be gone: list what is there now
        return
    compare_readers.clear()
    s.compare_selected = f"P{made.id}"
    s.compare_panel_members = []
    s.compare_panel_name = ""
    what = "made" if created else "already combines these comparisons"
    s.compare_flash = ("success" if created else "info",
                       f"Panel P{made.id} {what}: it is shown below.")


def handle_delete(panel_id: int) -> None:
    try:
        pair_panels.delete_pair_panel(runtime.get_sessions(), panel_id, actor=current_actor())
        st.session_state.compare_flash = (
            "info", f"Panel P{panel_id} was deleted; its comparisons are kept.")
        st.session_state.compare_selected = None
    except RubricWorkbenchError as exc:
        st.session_state.compare_flash = ("error", plain(str(exc)))
    compare_readers.clear()
