"""Try a criterion's new wording on reviewed responses, then adopt it (Judges page)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from grading.bootstrap import Interval
from grading.errors import RubricWorkbenchError
from grading.option_agreement import OptionPairwiseAgreement
from storage.dto import CriterionInfo, RunInfo
from storage.jobs import trial_worker
from storage.services import trial_progress, trials
from storage.services.trial_figures import choice_text
from ui import panel_readers, results_readers
from ui.auth import current_actor
from ui.boundary import plain
from ui.panel_view import run_label
from ui.runtime import database_key, get_sessions

POLL_SECONDS = 1.5
IDLE_POLL_SECONDS = 10.0  # to notice a trial started in another browser


def _f1(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _interval(interval: Interval | None) -> str:
    if interval is None:
        return "no interval (too few responses)"
    return f"{interval.level:.0%} interval {interval.low:.2f} to {interval.high:.2f}"


def render_trials(criteria: list[CriterionInfo], set_runs: list[RunInfo]) -> None:
    judges = [r for r in set_runs if r.grader != "rubric_as_judge"]
    if not judges:
        st.info("Trying a wording needs a per-criterion or one-shot run of this rubric "
                "version: its model and settings judge the new wording.")
        return
    by_id = {c.id: c for c in criteria}
    wanted = st.session_state.get("judges_criterion_id")
    if wanted not in by_id:
        st.session_state["judges_criterion_id"] = criteria[0].id
    criterion_id = st.selectbox("Criterion", list(by_id), key="judges_criterion_id",
                                format_func=lambda i: by_id[i].label)
    criterion = by_id[criterion_id]
    st.caption("Current wording:")
    st.text(criterion.requirement)
    run_ids = {r.id: r for r in judges}
    run_id = st.selectbox("Judge (the model and settings of this run)", list(run_ids),
                          format_func=lambda i: run_label(run_ids[i]), key="judges_trial_run")
    text = st.text_area("New wording", value=criterion.requirement,
                        key=f"judges_text_{criterion_id}", height=90)
    cap = st.number_input("Stop when the cost reaches (dollars, 0 = no cap)", min_value=0.0,
                          value=1.0, step=0.5, key="judges_trial_cap")
    db = database_key()
    try:
        # cached until the run grades more or a person reviews (the stamp), so typing in
        # another widget does not re-read every reviewed response
        plan = panel_readers.get_trial_plan(db, run_id, criterion_id, text,
                                            results_readers.run_stamp(db, (run_id,)))
    except RubricWorkbenchError as exc:
        st.warning(str(exc))
        plan = None
    if plan is not None:
        estimate = plan.estimate
        cost = "unknown (no price for this model)" if estimate.cost is None else \
            f"about ${estimate.cost:.4f}"
        st.caption(f"{len(plan.cases)} reviewed responses · {estimate.calls} calls · "
                   f"{estimate.total_tokens:,} tokens · cost {cost}. Answers already asked "
                   "with the same wording come from the cache at no cost.")
        if plan.examples is not None:
            shown = len(plan.examples.sets[0].examples)
            st.caption(f"Run #{plan.base_run.id} is calibrated: the judge sees the same "
                       f"{shown} reviewed examples for this criterion as in that run, so "
                       "only the wording differs between before and after. Responses shown "
                       "as examples are left out of the comparison.")
        if st.button("Try it", type="primary", key="judges_try"):
            handle_try(plan, cap)
    render_running(criterion_id)
    render_history(criterion_id, tuple(run_ids))


def handle_try(plan: trials.TrialPlan, cap: float) -> None:
    actor = current_actor()
    if actor is None:
        st.error("Say who you are first (your reviewer name, or sign in), then try again.")
        return
    max_cost = cap if cap > 0 else None
    if max_cost is not None and plan.estimate.cost is None:
        st.error(f"The price of {plain(plan.base_run.model)} is unknown, so the cost cap cannot be "
                 "kept: set its price in Settings, or set the cap to 0.")
        return
    try:
        trial_id = trial_worker.start_trial(get_sessions(), plan, actor=actor,
                                            max_cost=max_cost)
    except RubricWorkbenchError as exc:
        st.error(f"Not started: {plain(str(exc))}.")
        return
    st.session_state["judges_trial_follow"] = trial_id


def handle_retry(trial_id: int) -> None:
    actor = current_actor()
    if actor is None:
        st.session_state["judges_trial_flash"] = "Say who you are first, then try again."
        return
    try:
        trial_worker.retry_trial(get_sessions(), trial_id, actor=actor)
    except RubricWorkbenchError as exc:
        st.session_state["judges_trial_flash"] = f"Not tried again: {exc}."
        return
    st.session_state["judges_trial_follow"] = trial_id


def render_running(criterion_id: int) -> None:
    """Trials of this criterion that run or were interrupted — started here, in another
    browser, or before the app restarted — read from the database, polled while one runs."""
    active = [t for t in trial_progress.statuses(get_sessions(), criterion_id)
              if t.status in ("running", "interrupted")]
    running = any(t.status == "running" for t in active)

    @st.fragment(run_every=POLL_SECONDS if running else IDLE_POLL_SECONDS)
    def live() -> None:
        flash = st.session_state.pop("judges_trial_flash", None)
        if flash:
            st.error(plain(flash))
        current = [t for t in trial_progress.statuses(get_sessions(), criterion_id)
                   if t.status in ("running", "interrupted")]
        followed = st.session_state.get("judges_trial_follow")
        if followed is not None and followed not in {t.trial_id for t in current}:
            # the trial this browser followed has ended: show its result
            st.session_state["judges_trial_follow"] = None
            st.session_state["judges_trial_open"] = followed
            st.rerun()
        if any(t.status == "running" for t in current) != running:
            st.rerun()  # poll at the pace that fits what runs now
        for trial in current:
            render_progress(trial)

    live()


def render_progress(trial: trial_progress.TrialStatus) -> None:
    total = trial.total or 0
    done = f"{trial.judged} of {total} reviewed responses judged"
    if trial.status == "running":
        st.progress(trial.fraction, text=f"Trial {trial.trial_id}: judging the new wording… "
                                         f"{done}")
        return
    with st.container(border=True):
        st.warning(f"Trial {trial.trial_id} was interrupted ({done}): the app running it "
                   "stopped. Try it again: what it judged is kept, and answers already "
                   "asked come from the cache.")
        st.text(trial.requirement)
        st.button("Try again", key=f"judges_retry_{trial.trial_id}", on_click=handle_retry,
                  args=(trial.trial_id,))


def render_history(criterion_id: int, run_ids: tuple[int, ...]) -> None:
    past = trials.list_trials(get_sessions(), criterion_id)
    if not past:
        return
    progress = {t.trial_id: t for t in trial_progress.statuses(get_sessions(), criterion_id)}
    states = {trial_id: t.status for trial_id, t in progress.items()}
    ids = [t[0] for t in past]
    labels = {t[0]: f"trial {t[0]} · {t[2]}"
              + ("" if states.get(t[0]) == "done" else f" · {states.get(t[0])}")
              for t in past}
    opened = st.session_state.get("judges_trial_open")
    if opened not in ids:
        st.session_state["judges_trial_open"] = ids[0]
    trial_id = st.selectbox("Trials of this criterion", ids, key="judges_trial_open",
                            format_func=labels.get)
    db = database_key()
    # a trial that runs (or ran) changes as its progress is saved: part of the cache key
    shown = progress.get(trial_id)
    moving = (shown.status, shown.judged) if shown else ()
    render_result(panel_readers.get_trial(
        db, trial_id, (*results_readers.run_stamp(db, run_ids), *moving)))


def render_result(result: trials.TrialResult) -> None:
    with st.container(border=True):
        st.markdown(f"**Trial {result.trial_id}** of “{plain(result.plan.criterion.label)}” "
                    f"with {plain(run_label(result.plan.base_run))}")
        st.text(result.plan.requirement)
        if result.stopped:
            st.warning(result.stopped)
        if result.status == "failed":
            st.error(f"This trial failed: {plain(result.note)}")
        elif result.status in ("running", "interrupted"):
            st.info(f"This trial is {result.status}: the figures below cover the "
                    f"{result.judged} of {result.total or 0} responses judged so far.")
        before, after = result.before.agreement, result.after.agreement
        cols = st.columns(3)
        # Named for what it is and on which responses: the Agreement page's "macro-F1 vs
        # human" is the same judge over every reviewed response, a different figure.
        scope = (f"The base run against the people's verdicts on the {result.judged} "
                 "reviewed responses this trial judged (the Agreement page's “macro-F1 vs "
                 "human” covers every reviewed response of the dataset)")
        cols[0].metric(f"Macro-F1, current wording (n={before.pairs_used})",
                       _f1(before.balanced_f1),
                       help=f"{scope}; {_interval(result.before.macro_f1_interval)}")
        delta = None if None in (before.balanced_f1, after.balanced_f1) else \
            after.balanced_f1 - before.balanced_f1
        cols[1].metric(f"Macro-F1, new wording (n={after.pairs_used})",
                       _f1(after.balanced_f1),
                       delta=None if delta is None else f"{delta:+.2f}",
                       help=f"The new wording on the same responses; "
                            f"{_interval(result.after.macro_f1_interval)}")
        cols[2].metric("Flipped verdicts", len(result.flips))
        if result.plan.criterion.is_multi_choice:
            render_option_figures(result)
        st.caption(
            f"n = {after.pairs_used} reviewed responses · {_kappa_name(after)} "
            f"{_f1(before.cohens_kappa)} → {_f1(after.cohens_kappa)} · current wording: "
            f"{_interval(result.before.macro_f1_interval)}; new wording: "
            f"{_interval(result.after.macro_f1_interval)}; change: "
            f"{_interval(result.difference_interval)} (paired bootstrap over responses)"
            + (f" · {result.failed} judge failures" if result.failed else ""))
        if result.flips:
            st.dataframe(pd.DataFrame([{
                "response": f.external_id or f.response_id,
                "people": choice_text(f.human),
                "before": choice_text(f.before),
                "reason before": f.before_reason,
                "after": choice_text(f.after),
                "reason after": f.after_reason,
            } for f in result.flips]), hide_index=True, use_container_width=True)
        if result.status in ("done", "stopped"):
            render_adopt(result)


def _kappa_name(agreement) -> str:
    # an option criterion's agreement names its own kappa (weighted on an ordinal scale)
    return agreement.metric if isinstance(agreement, OptionPairwiseAgreement) else "kappa"


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}%"


def render_option_figures(result: trials.TrialResult) -> None:
    """A rated criterion: the exact-match rate and the scale's kappa (quadratic-weighted on
    an ordinal scale), the figures the Agreement page gives it, before and after."""
    before, after = result.before.agreement, result.after.agreement
    cols = st.columns(3)
    cols[0].metric(f"Exact match, current wording (n={before.pairs_used})",
                   _percent(before.percent_agreement),
                   help="Responses where the judge chose the very option people chose.")
    delta = None if None in (before.percent_agreement, after.percent_agreement) else \
        after.percent_agreement - before.percent_agreement
    cols[1].metric(f"Exact match, new wording (n={after.pairs_used})",
                   _percent(after.percent_agreement),
                   delta=None if delta is None else f"{delta:+.0f} points")
    name = _kappa_name(after)
    cols[2].metric(name[:1].upper() + name[1:], f"{_f1(before.cohens_kappa)} → "
                   f"{_f1(after.cohens_kappa)}",
                   help="Chance-corrected agreement with people's options; on an ordered "
                        "scale, a choice one step off counts less against the judge than "
                        "one far off.")
    for note in {before.note, after.note} - {""}:
        st.caption(plain(note))


def render_adopt(result: trials.TrialResult) -> None:
    carry = st.checkbox(
        "People's verdicts on this criterion still apply to the new wording (carry them "
        "over)", key=f"judges_carry_{result.trial_id}",
        help="Leave this off when the new wording asks for something different: the new "
             "version then starts with no human verdicts on this criterion.")
    if st.button("Adopt: make a new rubric version with this wording",
                 key=f"judges_adopt_{result.trial_id}"):
        actor = current_actor()
        if actor is None:
            st.error("Say who you are first (your reviewer name, or sign in).")
            return
        try:
            version = trials.adopt_wording(get_sessions(), result.trial_id, actor=actor,
                                           carry_human_verdicts=carry)
        except RubricWorkbenchError as exc:
            st.error(plain(f"Not adopted: {exc}."))
            return
        rubrics_note = "with people's verdicts carried over" if carry else \
            "without human verdicts on this criterion"
        st.success(f"Adopted as {plain(version.rubric_name)} v{version.number} "
                   f"({rubrics_note}). Grade it on the Grade page.")
