"""Compare: is B better than A? Two sources' responses to the same queries, paired and
judged on a rubric in both orders; B's wins / ties / losses per criterion with intervals and
how often the judge's verdict survived swapping the order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.jobs.comparison_queue import requeue_comparison
from storage.jobs.comparison_runner import STALE_SECONDS
from storage.services import comparisons
from storage.services.comparisons import ComparisonInfo
from ui import compare_readers, runtime
from ui.auth import current_actor
from ui.boundary import page_boundary, plain
from ui.compare_form import handle_start, judge_queued, render_form
from ui.compare_leaderboard import render_leaderboard
from ui.compare_panel_form import render_panel_form
from ui.compare_panels import render_selected_panel
from ui.compare_people import render_people
from ui.compare_view import render_results

POLL_SECONDS = 2.0

st.title("Compare")
st.caption("Pair two sources' responses to the same queries — two datasets, two values of "
           "one dataset's column such as model, or two text columns of one upload — and let "
           "a judge say, criterion by criterion, which is better. Every pair is asked in both "
           "orders; a verdict that flips with the order counts as a tie and as "
           "position-inconsistent.")


def _label(c: ComparisonInfo) -> str:
    # No status here: the picker is drawn from a cached list; the live line below has it.
    return f"#{c.id} · {c.b_label} vs {c.a_label} · {c.model}{' · holistic' if c.holistic else ''}"


def _judges(db: str, existing: list[ComparisonInfo]) -> dict[int | str, str]:
    """Every judge the page can show: each comparison (by id), then each panel of them
    ("P<id>"), labelled."""
    labels: dict[int | str, str] = {c.id: _label(c) for c in existing}
    for p in compare_readers.get_pair_panels(db):
        labels[f"P{p.id}"] = (f"{p.label} · {p.b_label} vs {p.a_label}"
                              f"{' · holistic' if p.holistic else ''}")
    return labels


def _stale(c: ComparisonInfo) -> bool:
    """Queued or running, but nobody has judged a pair for a while (the app restarted)."""
    seen = c.heartbeat_at or c.created_at
    return datetime.now(UTC) - seen > timedelta(seconds=STALE_SECONDS)


def handle_cancel(comparison_id: int) -> None:
    try:
        comparisons.cancel_comparison(runtime.get_sessions(), comparison_id,
                                      actor=current_actor())
        st.session_state.compare_flash = (
            "info", f"Comparison #{comparison_id} was cancelled; the pairs judged are kept.")
    except RubricWorkbenchError as exc:
        st.session_state.compare_flash = ("error", plain(str(exc)))
    compare_readers.clear()


def handle_resume(comparison_id: int) -> None:
    """Queue what is left (pending pairs and the failed ones) for the app's worker; stored
    pairs are kept. A second tab's Resume finds it queued and changes nothing."""
    sessions = runtime.get_sessions()
    try:
        done = requeue_comparison(sessions, comparison_id, actor=current_actor())
    except RubricWorkbenchError as exc:
        st.session_state.compare_flash = ("error", plain(str(exc)))
    else:
        c = done.comparison
        if not done.queued:
            st.session_state.compare_flash = (
                "info", f"Comparison #{comparison_id} is already {c.status}; nothing was "
                        "started twice.")
        else:
            left = c.pair_count - c.done_count
            who = ("the app's worker takes it now" if runtime.worker_enabled() else
                   "a `rubric-workbench worker` process judges it (this app's worker is off)")
            st.session_state.compare_flash = (
                "info", f"Comparison #{comparison_id} goes on with the pairs not yet compared "
                        f"({left}): {who}.")
            judge_queued(sessions, comparison_id)
    compare_readers.clear()


def render_status(c: ComparisonInfo) -> None:
    head, action = st.columns([5, 1], vertical_alignment="center")
    done = c.done_count + c.failed_count
    head.markdown(f"**{plain(c.b_label)}** (B) compared with **{plain(c.a_label)}** (A) · "
                  f"judge {plain(c.model)} · {c.status} · {done:,}/{c.pair_count:,} pairs"
                  f"{f' · {c.failed_count} failed' if c.failed_count else ''}"
                  f" · {c.identical_count} same text · {c.unmatched_count} unmatched")
    if c.error:
        head.text(c.error)
    if not c.finished:
        head.progress(done / c.pair_count if c.pair_count else 0.0)
        action.button("Cancel", key=f"compare_cancel_{c.id}", on_click=handle_cancel,
                      args=(c.id,), width="stretch")
    if ((c.finished and (c.status == "failed" or c.failed_count
                         or (c.status == "cancelled" and c.done_count < c.pair_count)))
            or (not c.finished and _stale(c))):
        action.button("Resume", key=f"compare_resume_{c.id}", on_click=handle_resume,
                      args=(c.id,), width="stretch",
                      help="Compare the pairs not compared yet (and retry the failed ones)")


def render_selected(db: str, comparison_id: int) -> None:
    first = comparisons.get_comparison(runtime.get_sessions(), comparison_id)
    # The page's own run draws what it read: read again, a comparison that ended meanwhile
    # (the app's worker is quick) called st.rerun() in the middle of a full run, and the
    # browser kept that run's results beside the next one's (the metrics twice).
    drawn = [first]

    @st.fragment(run_every=None if first.finished else POLL_SECONDS)
    def live() -> None:
        c = drawn.pop() if drawn else comparisons.get_comparison(runtime.get_sessions(),
                                                                  comparison_id)
        render_status(c)
        results = compare_readers.get_results(db, c.id, c.status, c.done_count,
                                              c.failed_count)
        render_results(c, results)
        render_people(db, c, results)
        render_leaderboard(db, c, compare_readers.get_comparisons(db))
        if c.finished != first.finished:
            st.rerun()  # stop polling once it is over

    live()


with page_boundary(compare_readers.clear):
    db = runtime.database_key()
    flash = st.session_state.compare_flash
    if flash:
        getattr(st, flash[0])(flash[1])
        st.session_state.compare_flash = None
    existing = compare_readers.get_comparisons(db)
    with st.expander("New comparison", expanded=not existing):
        choice = render_form(db)
        if choice.problem:
            st.caption(plain(choice.problem))
        st.button("Start comparison", type="primary", disabled=choice.problem is not None,
                  key="compare_start", on_click=handle_start, args=(choice,))
    if existing:
        with st.expander("New panel of judges"):
            render_panel_form(existing)
        labels = _judges(db, existing)
        ids = list(labels)
        if st.session_state.compare_selected not in ids:
            st.session_state.compare_selected = ids[0]
        chosen = st.selectbox("Comparison", ids, key="compare_selected",
                              format_func=labels.get,
                              help="A comparison (one judge), or a panel of comparisons")
        if isinstance(chosen, str):
            render_selected_panel(int(chosen[1:]), POLL_SECONDS)
        else:
            render_selected(db, chosen)
