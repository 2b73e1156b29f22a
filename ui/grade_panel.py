"""The Grade page's "grade as a judge panel": the rule, weights and cost cap, what stops a
panel (a holistic grader, a single model), and the panel made once the member runs are queued.

One panel per verdict grader over its models' runs; the panel itself is
storage.services.panels (found again, never copied, on a second click or a reload).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from grading.panels import MULTI_CHOICE_RULE, PANEL_RULES
from storage.services import panels
from ui import runtime
from ui.auth import current_actor
from ui.verdict_view import GRADER_LABELS, md_escape

HOLISTIC = "rubric_as_judge"
RULE_LABELS = {"majority": "majority", "unanimous": "unanimous", "any": "any",
               "weighted": "weighted majority"}
RULE_HELP = ("majority: MET with more than half of all members (a failed member abstains and "
             "still counts); unanimous: MET only if every member says MET; any: MET as soon "
             "as one member says MET; weighted majority: more than half of the members' "
             "weight. A MET/UNMET tie is undecided: CANNOT_ASSESS, scored by the "
             "CANNOT_ASSESS setting. " + MULTI_CHOICE_RULE)


@dataclass(frozen=True)
class PanelChoice:
    rule: str
    weights: dict[tuple[str, str | None], float] = field(default_factory=dict)
    cost_cap: float | None = None
    problems: tuple[str, ...] = ()


def _models(judges) -> list[tuple[str, str | None]]:
    return list(dict.fromkeys((j.model, j.api_base) for j in judges))


def _weight_key(model: tuple[str, str | None]) -> str:
    return f"grade_panel_weight_{model[0]}|{model[1] or ''}"


def render_panel_choice(judges) -> PanelChoice | None:
    """The panel options when "grade as a panel" is on; None when it is off."""
    s = st.session_state
    st.toggle("Grade as a judge panel", key="grade_as_panel",
              help="Several models grade the same responses; their verdicts are combined per "
                   "criterion by a voting rule into one panel column (Judges, Results).")
    if not s.grade_as_panel:
        return None
    models = _models(judges)
    left, right = st.columns(2)
    rule = left.selectbox("Panel rule", PANEL_RULES, key="grade_panel_rule",
                          format_func=RULE_LABELS.get, help=RULE_HELP)
    right.number_input("Stop the panel when its cost reaches (USD, 0 = no cap)",
                       min_value=0.0, step=0.5, key="grade_panel_cap",
                       help="Split over the members in proportion to their estimates; a "
                            "member that reaches its share stops, its other responses "
                            "pending.")
    weights = {}
    if rule == "weighted" and models:
        columns = st.columns(min(len(models), 4))
        for index, model in enumerate(models):
            key = _weight_key(model)
            s.setdefault(key, 1.0)
            weights[model] = float(columns[index % len(columns)].number_input(
                f"Weight of {model[0]}", min_value=0.1, step=0.5, key=key))
    problems = []
    if HOLISTIC in s.grade_graders:
        problems.append(
            f"{GRADER_LABELS[HOLISTIC]} gives one 0–100 score per response, not a verdict per "
            "criterion, so it cannot vote in a panel: remove it from Graders to grade as a "
            "panel (grade it separately if you want its score).")
    if len(models) < 2:
        problems.append("A panel needs at least two models: pick or type more models above.")
    cap = float(s.grade_panel_cap) or None
    return PanelChoice(rule, weights, cap, tuple(problems))


def render_panel_problems(choice: PanelChoice | None, estimates, judges) -> bool:
    """Why this panel cannot be launched (False), with the cost cap checked against the
    estimate of all members."""
    if choice is None:
        return True
    for problem in choice.problems:
        st.warning(md_escape(problem))
    if choice.problems:
        return False
    total = [e.cost for e in estimates]
    graders = sorted({GRADER_LABELS[j.grader] for j in judges})
    st.caption(f"As a panel ({choice.rule}): one panel per grader ({', '.join(graders)}) over "
               f"{len(_models(judges))} models; the estimate above covers every member.")
    if choice.cost_cap is None:
        return True
    if any(c is None for c in total):
        st.error("The cost cap cannot be kept: some models have no price. Set their price "
                 "per million tokens on the Settings page, or set the cap to 0.")
        return False
    if sum(total) > choice.cost_cap:
        st.warning(f"The estimate (${sum(total):,.4f}) is above the cap (${choice.cost_cap:g}): "
                   "the panel will stop at the cap with some responses not graded.")
    return True


def member_caps(choice: PanelChoice | None, estimates) -> list[float | None]:
    """Each member's share of the panel's cost cap, in proportion to its estimate."""
    if choice is None or choice.cost_cap is None:
        return [None] * len(estimates)
    costs = [e.cost or 0.0 for e in estimates]
    total = sum(costs)
    if total <= 0:
        return [choice.cost_cap / len(estimates)] * len(estimates)
    return [choice.cost_cap * c / total for c in costs]


def make_panels(choice: PanelChoice, judges, launched_runs, name: str) -> list[str]:
    """The panel of each grader's member runs (existing when already made); the messages."""
    by_grader: dict[str, list] = {}
    for judge, run in zip(judges, launched_runs, strict=True):
        by_grader.setdefault(judge.grader, []).append((judge, run))
    messages, made = [], []
    for grader, members in by_grader.items():
        weights = ([choice.weights[(j.model, j.api_base)] for j, _ in members]
                   if choice.rule == "weighted" else None)
        panel, created = panels.ensure_panel(  # members resumed with many grades: a worker's
            runtime.get_sessions(), run_ids=[run.id for _, run in members], rule=choice.rule,
            weights=weights, name=name, actor=current_actor(), fill="auto")
        runs_text = ", ".join(f"#{run.id}" for _, run in members)
        if created:
            messages.append(f"Panel P{panel.id} ({choice.rule} of runs {runs_text}, "
                            f"{GRADER_LABELS[grader]}) is made: its grades appear on Judges "
                            "and Results as the members finish"
                            + ("." if panel.ready else
                               f", once the app's worker has built it from the grades its "
                               f"members already hold ({panel.building.words})."))
        else:
            messages.append(f"Panel P{panel.id} ({choice.rule} of runs {runs_text}) already "
                            "exists, so no new panel was made.")
        made.append(panel.id)
    # Results shows them beside their members on the next visit, as the message says.
    st.session_state.results_panel_goto = made
    return messages


def render_panel_progress(current_runs) -> None:
    """Panels whose members are still grading: how many have finished (Grade's runs list)."""
    status = {run.id: run.status for run in current_runs}
    found = panels.list_panels(runtime.get_sessions())
    for panel in found:
        if not panel.ready:  # a worker fills its decisions (storage.jobs.panel_fills)
            st.caption(md_escape(f"Panel P{panel.id} is being built: {panel.building.words}."))
    forming = [p for p in found
               if any(status.get(m.run.id) in ("queued", "running") for m in p.members)]
    for panel in forming:
        finished = sum(1 for m in panel.members
                       if status.get(m.run.id) not in ("queued", "running"))
        st.caption(md_escape(
            f"Panel P{panel.id} ({panel.rule} of runs "
            f"{', '.join(f'#{m.run.id}' for m in panel.members)}): {finished} of "
            f"{len(panel.members)} members finished; its grades so far are on the Judges "
            "page (a member that fails abstains)."))
