"""Judge panels on the Results page: picked next to the runs, a score column like a run's,
their verdicts in the response dialog, and "Combine as a panel" from the runs shown."""

from __future__ import annotations

from collections.abc import Collection

import pandas as pd
import streamlit as st

from storage.dto import RunInfo
from storage.services import blindness, panels
from storage.services.blindness import Sight
from storage.services.panel_results import PanelResult, member_models
from storage.services.results import ResultSet, ResultsPage
from ui import panel_building, panel_readers, panel_view, safe_text
from ui.verdict_view import choice_badge, choice_text, format_score, md_escape, run_label

TIE = "⚖ tie"
WAITING = "⏳ members grading"


def panel_column(panel: panels.PanelInfo) -> str:
    """Like a run's column: short enough for a 100-pixel header."""
    return safe_text.text(f"P{panel.id} {panel.name or panel.rule}")[:24]


TAG_LENGTH = 26  # characters: a tag in the picker's column at 1280 pixels


def tag(panel: panels.PanelInfo) -> str:
    """The panel's name as its tag: ``panel 1 (majority of 3)``; a long name is shortened."""
    label = safe_text.text(panel.label)
    return label if len(label) <= TAG_LENGTH else label[:TAG_LENGTH - 1] + "…"


def pick_panels(db: str, result_set: ResultSet, where) -> tuple[panels.PanelInfo, ...]:
    """The panels to show beside the runs (none offered when the set has none); those a
    worker is still building are said with their progress, offered once ready."""
    found, building = panel_building.split(panel_readers.get_panels(
        db, result_set.dataset_id, result_set.rubric_version_id))
    if building:
        with where:
            panel_building.render_building(db, building)
    if not found:
        st.session_state.results_panel_ids = []
        return ()
    by_id = {p.id: p for p in found}
    s = st.session_state
    goto, s.results_panel_goto = s.results_panel_goto, None
    wanted = goto if isinstance(goto, list) else [goto]  # made on Grade: a list
    s.results_panel_ids = [pid for pid in dict.fromkeys([*s.results_panel_ids, *wanted])
                           if pid in by_id]
    # The tag is the panel's short name (it fits a 1280-pixel screen); its members are
    # said in full under the picker.
    picked = where.multiselect(
        "Panels to compare", list(by_id), key="results_panel_ids",
        format_func=lambda pid: tag(by_id[pid]),
        help="A panel combines its member runs' verdicts by its rule; its score comes "
             "from the same aggregation as a run's, with people's verdicts in place.")
    for pid in picked:
        where.caption(safe_text.md(f"{by_id[pid].label}: {member_models(by_id[pid])}"))
    return tuple(by_id[pid] for pid in picked)


def query(db: str, panel_ids: tuple[int, ...], sort_panel: int | None,
          sight: Sight = blindness.EVERYTHING) -> dict:
    """The keyword arguments that make ``results_readers.get_results_page`` read the
    table with ``sight``'s eyes (blind review) and these panels as columns (filtered,
    sorted and counted like runs)."""
    if not panel_ids:
        return {"sight": sight}
    return {"panel_ids": panel_ids, "panel_stamp": panel_readers.get_stamp(db, panel_ids),
            "sort_panel_id": sort_panel, "sight": sight}


def page_results(db: str, chosen: tuple[panels.PanelInfo, ...],
                 response_ids: tuple[int, ...], sight: Sight = blindness.EVERYTHING,
                 ) -> dict[int, dict[int, PanelResult]]:
    """Panel id -> response id -> result, for the responses on this page only, with the
    human verdicts ``sight`` may see."""
    stamp = panel_readers.get_stamp(db, tuple(p.id for p in chosen))
    return {p.id: panel_readers.get_panel_results(db, p.id, response_ids, stamp, sight)
            for p in chosen}


def add_columns(rows: list[dict], page: ResultsPage, chosen: tuple[panels.PanelInfo, ...],
                found: dict[int, dict[int, PanelResult]]) -> list[str]:
    """Put each panel's effective score after the runs' (before Flags); a tie adds a flag.
    Returns the panel columns' names."""
    names = [panel_column(p) for p in chosen]
    for row, item in zip(page.rows, rows, strict=True):
        flags = item.pop("Flags")
        ties = waiting = 0
        for panel, name in zip(chosen, names, strict=True):
            result = found[panel.id].get(row.response_id)
            item[name] = None if result is None else result.effective.score
            ties += 0 if result is None else result.ties
            waiting += 0 if result is None or result.grade.complete else 1
        item["Flags"] = " ".join(f for f in (flags, TIE if ties else "",
                                             WAITING if waiting else "") if f)
        # keep the text columns last, where the run table has them
        for key in ("Reviewed", "Query", "Output"):
            item[key] = item.pop(key)
    return names


def column_config(chosen: tuple[panels.PanelInfo, ...]) -> dict:
    return {panel_column(p): st.column_config.NumberColumn(
        format="%.3f", width=100,
        help=f"Effective score of {md_escape(p.label)} ({md_escape(member_models(p))}): the "
             "panel's verdicts, people's in their place, scored by the same aggregation. "
             f"{TIE}: the members tied (a MET/UNMET tie is undecided, CANNOT_ASSESS; panels made "
             "before that rule took the lower score; options split evenly take the worse "
             f"one). {WAITING}: "
             "incomplete, a member run has not graded this response yet; what it could "
             "still swing is undecided and unscored, never counted as failed.")
        for p in chosen}


def render_detail(db: str, chosen: tuple[panels.PanelInfo, ...], response_id: int,
                  sight: Sight = blindness.EVERYTHING) -> None:
    """In the response dialog: each panel's score and, per criterion, its verdict, how it
    was reached (a tie says which way it resolved) and each member's verdict."""
    if not chosen:
        return
    found = page_results(db, chosen, (response_id,), sight)
    for panel in chosen:
        result = found[panel.id].get(response_id)
        st.markdown(f"**{md_escape(panel.label)}** · {md_escape(member_models(panel))}")
        if result is None:
            st.caption("No member has graded this response yet.")
            continue
        effective = result.effective
        st.caption(f"effective score {format_score(effective.score)} · panel "
                   f"{format_score(effective.judge_score)} · reviewed "
                   f"{effective.reviewed_count}/{effective.criteria_count}"
                   + (f" · {result.ties} ties" if result.ties
                      else ""))
        if not result.grade.complete:
            st.caption(f"{WAITING}: incomplete until runs "
                       + ", ".join(f"#{run_id}" for run_id in result.grade.pending_members)
                       + " have graded this response; it may still change.")
        if effective.error:
            st.text(safe_text.text(effective.error))
        st.dataframe(pd.DataFrame([{
            "Criterion": safe_text.text(row.label),
            "Panel": choice_text(row.decision.choice) if row.decision.choice else
            "undecided" if result.grade.pending_members else "no verdict",
            "How": safe_text.text(row.decision.note),
            **{safe_text.text(f"#{m.run.id} {m.run.model.split('/')[-1]}"):
               (choice_text(v) if v else "grading" if m.run.id in result.grade.pending_members
                else "failed")
               for m, v in zip(panel.members, row.member_verdicts, strict=True)},
            "Effective": choice_text(eff.effective_choice) or "—",
        } for row, eff in zip(result.grade.criteria, effective.criteria, strict=True)]),
            hide_index=True, width="stretch")


def handle_open_combine(run_ids: tuple[int, ...]) -> None:
    st.session_state.results_combine_open = True
    st.session_state.results_combine_runs = run_ids  # to name any deleted while it is open


def handle_close_combine() -> None:
    st.session_state.results_combine_open = False


def render_combine(run_ids: tuple[int, ...], by_id: dict[int, RunInfo], where) -> None:
    """Combine the runs shown into a panel (a dialog): the same service as the Judges page."""
    where.button("Combine as a panel", icon=":material/groups:", key="results_combine",
                 width="stretch", on_click=handle_open_combine, args=(run_ids,),
                 help="Make a judge panel from the runs shown: their verdicts combined by "
                      "a voting rule, shown here as one more column.")
    if st.session_state.results_combine_open:
        st.dialog("Combine runs as a judge panel", width="large",
                  on_dismiss=handle_close_combine)(render_combine_form)(run_ids, by_id)


def render_stale_combine(existing: set[int]) -> None:
    """The "Combine as a panel" dialog was open while another tab deleted some of its runs
    (with their dataset or rubric): it closes, naming them, and nothing is made."""
    s = st.session_state
    gone = [r for r in s.results_combine_runs if r not in existing]
    if not (s.results_combine_open and gone):
        return
    s.results_combine_open = False
    s.results_combine_runs = ()
    st.error(md_escape(
        f"Run{'s' if len(gone) > 1 else ''} {', '.join(f'#{r}' for r in gone)} no longer "
        f"exist{'' if len(gone) > 1 else 's'}: deleted (with their dataset or rubric) since "
        "the “Combine as a panel” dialog was opened. No panel was made; pick the runs "
        "again."))


def render_combine_form(run_ids: tuple[int, ...], by_id: dict[int, RunInfo]) -> None:
    voters = panel_view.voting_runs([by_id[r] for r in run_ids], "Pick at least two "
                                    "per-criterion or one-shot runs under “Runs to compare” "
                                    "to combine them.")
    if voters is None:
        return
    with st.form("results_panel_form", border=False):
        fields = panel_view.render_panel_fields(voters, run_label)
        if st.form_submit_button("Create panel", type="primary"):
            handle_combine(*fields)


def handle_combine(run_ids: list[int], rule: str, weights_text: str, name: str) -> None:
    made = panel_view.create_from_form(run_ids, rule, weights_text, name, "combine")
    if made is None:
        return
    panel, created = made
    st.session_state.results_combine_open = False
    st.session_state.results_panel_goto = panel.id  # picked on the next run
    shown = ("It is shown next to the runs." if panel.ready else
             f"It is being built ({panel.building.words}) and is shown next to the runs "
             "when ready.")
    message = (f"Created {panel.label}: {shown[0].lower()}{shown[1:]}" if created
               else f"{panel_view.made_message(panel, created)} {shown}")
    warning = panel_view.rule_warning(panel.rule, len(panel.members)) if created else None
    st.session_state.results_flash = (("warning", f"{message} {warning}") if warning
                                      else ("success", message))
    st.rerun()


def response_scores(db: str, dataset_id: int, rubric_version_id: int, response_id: int
                    ) -> list[tuple[panels.PanelInfo, PanelResult | None]]:
    """Every panel of the result set with its result for one response (Review's score row);
    one still being built is left out until it is ready."""
    found = panel_building.split(panel_readers.get_panels(db, dataset_id, rubric_version_id))[0]
    if not found:
        return []
    results = page_results(db, tuple(found), (response_id,))
    return [(panel, results[panel.id].get(response_id)) for panel in found]


def members_line(panel: panels.PanelInfo, verdicts, shown_runs: Collection[int]) -> str:
    """``Members: #1, #2 (verdicts above) · #5 llama3 UNMET``: a member whose verdict is in
    the judges' columns just above is named, not repeated; any other member's is given."""
    above = [f"#{m.run.id}" for m in panel.members if m.run.id in shown_runs]
    others = [f"{md_escape(f'#{m.run.id} ' + m.run.model.split('/')[-1])} "
              f"{md_escape((choice_text(v) or '').replace('_', ' ')) if v else 'failed'}"
              for m, v in zip(panel.members, verdicts, strict=True)
              if m.run.id not in shown_runs]
    parts = ([f"{', '.join(above)} (verdicts above)"] if above else []) + others
    return "Members: " + " · ".join(parts)


def render_criterion_verdicts(db: str, dataset_id: int, rubric_version_id: int,
                              response_id: int, criterion_id: int,
                              shown_runs: Collection[int] = ()) -> None:
    """Under the judges' verdicts on one criterion (Review): each panel's verdict, how it
    was reached, and its members (``shown_runs``: the judges whose verdicts are drawn just
    above, named rather than repeated). The caller hides this wherever it hides the judges
    (blind mode)."""
    found = panel_building.split(panel_readers.get_panels(db, dataset_id, rubric_version_id))[0]
    if not found:
        return
    results = page_results(db, tuple(found), (response_id,))
    for panel in found:
        result = results[panel.id].get(response_id)
        row = None if result is None else next(
            (r for r in result.grade.criteria if r.criterion_id == criterion_id), None)
        if row is None:
            continue
        st.markdown(f"{choice_badge(row.decision.choice)} "
                    f"**{md_escape(panel.label)}**"
                    + (" · :orange-badge[tie]" if row.decision.tie else ""))
        st.caption(md_escape(row.decision.note))
        st.caption(members_line(panel, row.member_verdicts, shown_runs))
