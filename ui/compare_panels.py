"""The Compare page's view of a panel of pairwise judges, read like one judge: B's win rate
with its interval, the position consistency, the table per criterion, the panel beside each
of its judges, and — once people reviewed pairs — the panel against the people."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from grading.pairwise.summary import ComparisonSummary
from storage.services import pair_panels, pair_reviews
from storage.services.pair_panels import PairPanelInfo
from storage.services.reviewers import Role
from ui import compare_readers, runtime, safe_text
from ui.auth import current_actor
from ui.boundary import page_boundary, plain
from ui.compare_panel_form import handle_delete
from ui.compare_people import render_beside_people
from ui.compare_view import (
    interval_text,
    not_judged_frame,
    render_figures,
    share,
    summary_frame,
)

PANEL_CONSISTENCY = ("Share of the panel's preferences where every judge that voted gave the "
                     "same answer with A shown first and with B shown first")


def progress(panel: PairPanelInfo) -> compare_readers.Progress:
    return tuple((c.id, c.status, c.done_count, c.failed_count) for c in panel.members)


def render_selected_panel(panel_id: int, poll_seconds: float) -> None:
    """The panel, followed while a member is judging again (resumed)."""
    db = runtime.database_key()
    first = pair_panels.get_pair_panel(runtime.get_sessions(), panel_id)
    drawn = [first]

    @st.fragment(run_every=None if first.finished else poll_seconds)
    def live() -> None:
        # A poll reruns this alone, outside the page's boundary: the panel (or a member)
        # deleted in another tab meanwhile is a message here too.
        with page_boundary(compare_readers.clear):
            panel = drawn.pop() if drawn else pair_panels.get_pair_panel(
                runtime.get_sessions(), panel_id)
            render_panel(db, panel)
            if panel.finished != first.finished:
                st.rerun()

    live()


def render_status(panel: PairPanelInfo) -> None:
    head, action = st.columns([5, 1], vertical_alignment="center")
    head.markdown(f"**{plain(panel.b_label)}** (B) compared with **{plain(panel.a_label)}** "
                  f"(A) · a panel of {len(panel.members)} judges by {panel.rule}"
                  f"{' · holistic' if panel.holistic else ''}")
    head.caption(plain(" · ".join(f"#{c.id} {c.model} ({c.status})" for c in panel.members)))
    busy = [c for c in panel.members if not c.finished]
    if busy:
        head.caption(plain(
            "Judging again: " + ", ".join(f"#{c.id}" for c in busy) + ". The panel's figures "
            "follow as its pairs are stored."))
    actor = current_actor()
    if actor is not None and actor.can(Role.ADMIN):  # the service checks it again
        action.button("Delete panel", key=f"compare_panel_delete_{panel.id}",
                      on_click=handle_delete, args=(panel.id,), width="stretch",
                      help="Remove the panel; its comparisons are kept")


def judges_frame(db: str, panel: PairPanelInfo, summary: ComparisonSummary) -> pd.DataFrame:
    """The panel beside each of its judges: B's win rate, its interval, the position
    consistency and the pairs each judged."""
    rows = [("the panel", summary)]
    for c in panel.members:
        own = compare_readers.get_results(db, c.id, c.status, c.done_count, c.failed_count)
        rows.append((f"#{c.id} {c.model}", own.summary))
    return pd.DataFrame([{
        "judge": safe_text.text(name), "B win rate": share(s.overall.win_rate if s else None),
        "95% interval": interval_text(s.overall.interval if s else None),
        "position-consistent": share(s.consistency_rate if s else None),
        "pairs judged": s.overall.judged if s else 0,
    } for name, s in rows])


def render_panel(db: str, panel: PairPanelInfo) -> None:
    render_status(panel)
    results = compare_readers.get_panel_results(db, panel.id, progress(panel))
    pairs = max(c.pair_count for c in panel.members)
    if results.summary is None:
        st.info("No pair was judged by any member; see why below.")
    else:
        render_figures(results.summary, a_label=panel.a_label, b_label=panel.b_label,
                       pairs=pairs, consistency_help=PANEL_CONSISTENCY)
        st.dataframe(summary_frame(results.summary), hide_index=True, width="stretch")
        st.markdown("**The panel beside its judges**")
        st.caption("Per pair and criterion the panel takes what more than half of the judges "
                   "that voted chose (A, B or tie; a split panel is a tie; a judge that failed "
                   "or could not assess does not vote); its preference is position-consistent "
                   "when every judge that voted was. The pair's result then goes through the "
                   "same aggregation as one judge's.")
        st.dataframe(judges_frame(db, panel, results.summary), hide_index=True,
                     width="stretch")
        render_panel_people(db, panel, results.summary)
    if results.not_judged:
        st.subheader("Not compared by the panel")
        st.caption("Pairs no member judged, with each member's reason. Rows without a "
                   "partner and identical pairs are listed under each comparison.")
        st.dataframe(not_judged_frame(results), hide_index=True, width="stretch")


def render_panel_people(db: str, panel: PairPanelInfo, judge: ComparisonSummary) -> None:
    actor = current_actor()
    if actor is None or not actor.can(Role.REVIEWER):
        return  # people's preferences are a reviewer's to read
    sessions = runtime.get_sessions()
    saves = tuple(pair_reviews.review_stamp(sessions, c.id) for c in panel.members)
    if not any(count for count, _newest in saves):
        return
    people, rows = compare_readers.get_panel_people(db, panel.id, actor,
                                                    (progress(panel), saves))
    st.subheader("The panel with people's preferences")
    st.caption("People reviewed pairs of the panel's comparisons (Review pairs page); a pair "
               "reviewed in any of them counts, each person's latest answer. Where they "
               "agree, or an adjudicator decided, their preference replaces the panel's, "
               "through the same aggregation. Reviewers see people's decisions only on the "
               "pairs they answered whole.")
    render_beside_people("the panel", "The panel", judge, people, rows)
