"""The Grade page's runs: live progress of active runs, cancel, requeue, and every run.

The list polls the database, so it follows every run that becomes active — launched here,
requeued, started by a command-line worker or launched from another browser — without a
reload: quickly while something is active, slowly (a cheap read) while nothing is.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.dto import RunInfo
from storage.services import runs
from storage.services.results import ResultSet
from ui import calibration_view, grade_panel, runtime
from ui import results_readers as readers
from ui.auth import current_actor
from ui.verdict_view import (
    GRADER_LABELS,
    STATUS_BADGES,
    md_escape,
    run_label,
    status_badge,
    status_text,
)
from ui.wording import cost_text

POLL_SECONDS = 2.0  # while a run is queued or running
IDLE_POLL_SECONDS = 5.0  # otherwise: to notice runs that become active elsewhere
ACTIVE = ("queued", "running")


def _act(action, run_id: int, done: str) -> None:
    """Cancel or requeue as the current person; say what happened (or why not) on the page."""
    try:
        action(runtime.get_sessions(), run_id, actor=current_actor())
        st.session_state.grade_flash = ("info", done)
    except RubricWorkbenchError as exc:
        st.session_state.grade_flash = ("error", md_escape(str(exc)))
    readers.get_runs.clear()


def handle_cancel(run_id: int) -> None:
    _act(runs.cancel_run, run_id,
         f"Run #{run_id} was cancelled; the grades it stored are kept.")


def handle_requeue(run_id: int) -> None:
    _act(runs.requeue_run, run_id,
         f"Run #{run_id} is queued again; only the responses without a grade are graded.")


def _ended_badly(run: RunInfo) -> bool:
    return run.status in ("failed", "cancelled") or (run.status == "done"
                                                      and run.failed_count > 0)


def render_stopped(current: list[RunInfo]) -> None:
    """Failed and cancelled runs, and runs that finished with failed grades, newest first,
    with their error and a way to resume."""
    stopped = [r for r in reversed(current) if _ended_badly(r)][:5]
    for run in stopped:
        with st.container(border=True):
            head, action = st.columns([5, 1], vertical_alignment="center")
            head.markdown(f"{status_badge(run)} **{md_escape(run_label(run))}** · "
                          f"{md_escape(run.status_words)} · "
                          f"{run.done_count:,}/{run.response_count:,} graded")
            if run.error:
                head.text(run.error)
            if run.status == "done":
                continue  # finished: its failed grades are in Results (a new run regrades)
            capped = run.stopped_by_cost_cap
            if run.paused_by_provider:  # requeued, it probes the provider with one call first
                action.button("Resume", key=f"grade_requeue_{run.id}", on_click=handle_requeue,
                              args=(run.id,), width="stretch",
                              help="One probe call goes to the provider first; the run goes "
                                   "on only if it answers, else it stays paused")
                continue
            # Requeued, a capped run would stop again at once: its cost already reached the cap.
            action.button("Requeue", key=f"grade_requeue_{run.id}", on_click=handle_requeue,
                          args=(run.id,), width="stretch", disabled=capped,
                          help="Its cost reached its cap: launch it again with a higher cap "
                               "(answers already paid for come from the cache)" if capped
                          else "Grade the responses this run has not graded yet")


def progress_line(progress) -> str:
    # graded = with a score; a failed grade is counted apart, never as graded
    parts = [f"{progress.done:,}/{progress.total:,} graded"]
    if progress.failed:
        parts.append(f"{progress.failed:,} failed")
    parts.append("cost " + cost_text(progress.known_cost, progress.unknown_cost_count,
                                     progress.graded))
    if progress.cache_hits:
        parts.append(f"{progress.cache_hits:,} cached")
    if progress.eta_s is not None and not progress.finished:
        parts.append(f"ETA {duration(progress.eta_s)}")
    if progress.notice and not progress.finished:
        parts.append(progress.notice)
    return " · ".join(parts)


def duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def runs_table(all_runs: list[RunInfo], sets: Sequence[ResultSet] = ()) -> list[dict]:
    """Every run, newest first, with the rubric version and dataset it graded (``sets``:
    the result sets, which name them)."""
    named = {(s.dataset_id, s.rubric_version_id): s for s in sets}

    def where(r: RunInfo) -> tuple[str, str]:
        found = named.get((r.dataset_id, r.rubric_version_id))
        if found is None:  # a run newer than the cached sets: named on the next refresh
            return f"version #{r.rubric_version_id}", f"dataset #{r.dataset_id}"
        return f"{found.rubric_name} v{found.version_number}", found.dataset_name

    return [{
        "Run": f"#{r.id}", "Status": status_text(r), "Name": r.name,
        "Rubric": where(r)[0], "Dataset": where(r)[1],
        "Grader": GRADER_LABELS.get(r.grader, r.grader), "Model": r.model,
        "Graded": f"{r.done_count:,}/{r.response_count:,}", "Failed": r.failed_count,
        "Tokens": r.total_tokens,
        "Cost": cost_text(r.cost, r.unknown_cost_count, r.graded_count),
        "Cost cap": (f"${r.settings.extra['cost_cap']:g}" if r.settings.extra.get("cost_cap")
                     else ""),
        "Created": r.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M"),
        "Calibration": (f"k={r.settings.calibration.k}, seed {r.settings.calibration.seed}"
                        if r.settings.calibration is not None else ""),
        "Launched by": r.launched_by or "",
        "Error": r.error or "",
    } for r in reversed(all_runs)]


def render_active(db: str, run: RunInfo) -> None:
    progress = readers.get_progress(db, run)
    with st.container(border=True):
        head, cancel = st.columns([5, 1])
        head.markdown(f"{STATUS_BADGES[progress.status]} **{md_escape(run_label(run))}**")
        head.progress(progress.fraction, text=progress_line(progress))
        if progress.status == "queued":
            head.caption("Waiting for a worker to pick it up.")
        cancel.button("Cancel", key=f"grade_cancel_{run.id}", on_click=handle_cancel,
                      args=(run.id,), width="stretch")


def _active_ids(all_runs: list[RunInfo]) -> frozenset[int]:
    return frozenset(r.id for r in all_runs if r.status in ACTIVE)


def render_runs(db: str, *, say_when_empty: bool = True) -> None:
    """Active runs with live progress, then every run; with no run yet, a quiet poll."""
    readers.get_runs.clear()  # the poll below compares with what the page drew from
    drawn_active = _active_ids(readers.get_runs(db))

    @st.fragment(run_every=POLL_SECONDS if drawn_active else IDLE_POLL_SECONDS)
    def live() -> None:
        readers.get_runs.clear()  # the fragment is the poll: always read fresh totals
        current = readers.get_runs(db)
        now_active = _active_ids(current)
        if now_active != drawn_active:
            # A run started (requeue, launch, a worker, another browser) or finished: redraw
            # the page, which polls again at the pace that fits what is active now.
            st.rerun()
        if not current:
            if say_when_empty:
                st.subheader("Runs")
                st.info("No runs yet. Pick a rubric, responses and judges above, then launch.")
            return
        st.subheader("Runs")
        for run in current:
            if run.id in now_active:
                render_active(db, run)
        render_stopped(current)
        grade_panel.render_panel_progress(current)
        st.dataframe(runs_table(current, readers.get_result_sets(db)), hide_index=True,
                     width="stretch")
        calibration_view.render_run_examples(db, current)
        if any(r.status == "done" for r in current):
            st.page_link("app_pages/results.py", label="Compare the results",
                         icon=":material/table_chart:")
        st.caption(f"Updated {datetime.now(UTC):%H:%M:%S} UTC"
                   + (f"; refreshing every {POLL_SECONDS:g} s." if now_active else "."))

    live()
