"""Judge panels on the Judges page: the panels of a result set and the form that makes one."""

from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd
import streamlit as st

from grading.errors import RubricWorkbenchError
from grading.panels import MULTI_CHOICE_RULE, PANEL_RULES
from storage.dto import RunInfo
from storage.export_files import to_temp_file
from storage.export_names import download_name
from storage.panel_commands import panel_records
from storage.services import panel_results, panels
from storage.services.results import ResultSet
from ui import panel_building, panel_readers, safe_text
from ui.auth import current_actor
from ui.boundary import count, plain
from ui.runtime import database_key, get_sessions

RULE_HELP = {
    "majority": "A verdict needs more than half of all members. A failed member or a "
                "CANNOT_ASSESS answer abstains and still counts in the denominator.",
    "unanimous": "MET only when every member says MET; one UNMET makes it UNMET.",
    "any": "MET as soon as one member says MET.",
    "weighted": "Like majority, with a weight per member.",
}


def run_label(run: RunInfo) -> str:
    name = f" “{run.name}”" if run.name else ""
    return f"run {run.id}{name}: {run.grader.replace('_', '-')} · {run.model}"


def render_panels(result_set: ResultSet, set_runs: list[RunInfo]) -> None:
    db = database_key()
    existing = panel_readers.get_panels(db, result_set.dataset_id,
                                        result_set.rubric_version_id)
    ready, building = panel_building.split(existing)
    if existing:
        for panel in ready:
            render_panel(db, panel)
        panel_building.render_building(db, building)
    else:
        st.caption("No panel yet for this dataset and rubric version.")
    render_create_form(set_runs)


def render_panel(db: str, panel: panels.PanelInfo) -> None:
    # Cached by a stamp of the members' grades and the human verdicts: a rerun (any widget
    # on the page) recomputes nothing until a member grades or a person reviews; the
    # members' alpha reads their grades alone, so a person's verdict does not move its stamp.
    stamp = panel_readers.get_stamp(db, (panel.id,))
    with st.container(border=True):
        st.markdown(f"**{plain(panel.label)}** — {panel.rule} of "
                    f"{count(len(panel.members), 'run')}")
        st.caption(" · ".join(
            run_label(m.run) + (f" (weight {m.weight:g})" if panel.rule == "weighted" else "")
            for m in panel.members))
        grades = [r.grade for r in
                  panel_readers.get_panel_results(db, panel.id, None, stamp).values()]
        scored = [g.score for g in grades if g.score is not None]
        costs = [g.cost for g in grades]
        cols = st.columns(4)
        cols[0].metric("Responses", len(grades))
        cols[1].metric("Mean panel score",
                       "—" if not scored else f"{sum(scored) / len(scored):.2f}")
        cols[2].metric("Ties (undecided)" if panel.tie_rule == "undecided"
                       else "Ties decided by the lower score",
                       sum(1 for g in grades for c in g.criteria if c.decision.tie))
        total = None if any(c is None for c in costs) else sum(c for c in costs if c)
        cols[3].metric("Cost of the members", "unknown" if total is None else f"${total:.4f}")
        agreement = panel_readers.get_member_agreement(db, panel.id,
                                                       panel_results.member_stamp(stamp))
        if agreement:
            st.markdown("Agreement among the members, per criterion (Krippendorff's α):")
            st.dataframe(pd.DataFrame([{
                "criterion": a.label,
                "α": None if a.alpha is None else round(a.alpha, 3),
                "responses": a.units,
                "flag": "low agreement" if a.low else "",
                "note": a.note,
            } for a in agreement]), hide_index=True, use_container_width=True)
            st.caption("α below 0.667 is flagged: the members read that criterion "
                       "differently, so the panel's verdict there rests on a vote, not a "
                       "consensus.")
        st.download_button(
            "Download the panel's verdicts (JSONL)",
            # built only when clicked, not on every rerun: a page at a time into a file
            lambda panel_id=panel.id: download_panel(panel_id),
            file_name=download_name("panel", panel.label, ext="jsonl"), mime="application/json",
            on_click="ignore", key=f"judges_panel_download_{panel.id}")


def download_panel(panel_id: int) -> bytes:
    """The panel's records written a page at a time to a temporary file, then its bytes
    (what the download button keeps: see ui/app_pages/results.py ``export_runs``)."""
    with to_temp_file(lambda target: target.writelines(
            json.dumps(r, ensure_ascii=False) + "\n"
            for r in panel_records(get_sessions(), panel_id))) as found:
        return found.read()


def voting_runs(runs: list[RunInfo], too_few: str) -> list[RunInfo] | None:
    """The runs that can vote in a panel; None, after saying ``too_few``, when under two."""
    voters = [r for r in runs if r.grader != "rubric_as_judge"]
    holistic = len(runs) - len(voters)
    if holistic:
        st.caption(f"{count(holistic, 'holistic run')} left out: a holistic judge gives one "
                   "0-100 score, not a verdict per criterion, so it cannot vote.")
    if len(voters) < 2:
        st.info(too_few)
        return None
    return voters


def render_panel_fields(voters: list[RunInfo], label: Callable[[RunInfo], str],
                        default: int | None = None) -> tuple[list[int], str, str, str]:
    """The fields of a create-panel form, inside the caller's ``st.form`` (Judges and Results
    share them): member run ids, rule, weights as typed, name."""
    labels = {safe_text.text(label(r)): r.id for r in voters}
    chosen = st.multiselect("Member runs", list(labels), default=list(labels)[:default])
    rule = st.selectbox("Rule", PANEL_RULES, format_func=str.capitalize,
                        help="\n\n".join([f"**{k}**: {v}" for k, v in RULE_HELP.items()]
                                         + [MULTI_CHOICE_RULE]))
    st.caption("A MET/UNMET tie is undecided: the panel's verdict is CANNOT_ASSESS (scored by "
               "its CANNOT_ASSESS setting), and its record says so. Panels made before this "
               "rule keep theirs: the verdict with the lower score.")
    weights_text = st.text_input(
        "Weights (weighted rule only)", placeholder="e.g. 2, 1, 1 — one per member run")
    name = st.text_input("Panel name (optional)", max_chars=200)
    return [labels[c] for c in chosen], rule, weights_text, name


def render_create_form(set_runs: list[RunInfo]) -> None:
    st.markdown("**Make a panel from these runs**")
    voters = voting_runs(set_runs, "A panel needs at least two per-criterion or one-shot runs "
                         "of this rubric version over this dataset. Grade it with more models "
                         "on the Grade page.")
    if voters is None:
        return
    with st.form("judges_panel_form", border=True):
        fields = render_panel_fields(voters, run_label, default=3)
        submitted = st.form_submit_button("Create panel", type="primary")
    if submitted:
        handle_create(*fields)
    flash = st.session_state.pop("judges_panel_flash", None)
    if flash:
        getattr(st, flash[0])(plain(flash[1]))


def create_from_form(run_ids: list[int], rule: str, weights_text: str, name: str,
                     who_first: str):
    """The panel a create form asked for (Judges and Results share it), or None after saying
    what is wrong (no identity, weights that are not numbers, the service's refusal)."""
    actor = current_actor()
    if actor is None:
        st.error(f"Say who you are first (your reviewer name, or sign in), then {who_first}.")
        return None
    weights = None
    if weights_text.strip():
        try:
            weights = [float(w) for w in weights_text.replace(";", ",").split(",") if w.strip()]
        except ValueError:
            st.error("Weights must be numbers separated by commas, e.g. 2, 1, 1.")
            return None
    try:
        # a big one is filled by the worker (storage.jobs.panel_fills), not in this rerun
        made = panels.ensure_panel(get_sessions(), run_ids=run_ids, rule=rule,
                                   weights=weights, name=name, actor=actor, fill="auto")
    except RubricWorkbenchError as exc:
        st.error(plain(f"The panel was not created: {exc}."))
        return None
    panel_readers.clear_after_panel_change()
    return made


def rule_warning(rule: str, members: int) -> str | None:
    """What a majority over an even number of members does to disagreements, said when the
    panel is made (a two-member majority turned every disagreement into a tie, silently)."""
    if rule != "majority" or members % 2:
        return None
    if members == 2:
        return ("A majority of two members needs both: every disagreement between them is a "
                "tie, and a tie is undecided (CANNOT_ASSESS). Add a third member "
                "for a real majority, or choose “Unanimous” if that is what you mean.")
    half = members // 2
    return (f"With {members} members a {half}–{half} split is a tie, and a tie is "
            "undecided (CANNOT_ASSESS); an odd number of members avoids ties.")


def made_message(panel, created: bool) -> str:
    """What a create form says: a second click (or tab) finds the panel, never a copy (nor a
    second build of one still being built)."""
    building = ("" if panel.ready else
                f" It is being built ({panel.building.words}); its figures appear when it "
                "is ready.")
    if created:
        return f"Created {panel.label}.{building}"
    return (f"{panel.label} already combines these runs with this rule and these weights: "
            f"no copy was made.{building}")


def handle_create(run_ids: list[int], rule: str, weights_text: str, name: str) -> None:
    made = create_from_form(run_ids, rule, weights_text, name, "create the panel")
    if made is None:
        return
    panel, created = made
    warning = rule_warning(panel.rule, len(panel.members))
    st.session_state["judges_panel_flash"] = (
        ("warning", f"{made_message(*made)} {warning}") if warning and created
        else ("success", made_message(*made)))
    st.rerun()
