"""Agreement page, judge panels: each panel against people next to each of its members against
people, with the cost of each; and per criterion how far the members agree (alpha), with the
criteria they read differently flagged."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.services.agreement import AgreementReport, JudgeSummary
from storage.services.panels import LOW_MEMBER_AGREEMENT
from ui import panel_building, panel_readers, safe_text
from ui.agreement_text import fmt, fmt_cost, fmt_pct


def _row(judge: JudgeSummary, role: str) -> dict:
    s, v = judge.source, judge.verdicts_vs_human
    return {
        "Role": role,
        "Judge": safe_text.text(s.label if not s.is_panel else f"Panel P{s.panel_id}"),
        "κ vs Human": fmt(v.cohens_kappa) if v else "—",
        "Macro-F1 vs Human": fmt(v.balanced_f1) if v else "—",
        "Agreement": fmt_pct(v.percent_agreement) if v else "—",
        "Pairs": v.pairs_used if v else 0,
        "Cost": fmt_cost(s.cost) + (f" (+{s.unknown_cost_count} unpriced)"
                                    if s.cost is not None and s.unknown_cost_count else ""),
        "Cost / grade": fmt_cost(s.cost_per_grade),
    }


def render_panels(report: AgreementReport, db: str) -> None:
    found = [j for j in report.judges if j.source.is_panel]
    building = panel_building.split(panel_readers.get_panels(
        db, report.data.dataset_id, report.data.rubric_version_id))[1]
    if building:  # a source of the report once a worker has built it
        st.subheader("Judge panels being built")
        panel_building.render_building(db, building)
    if not found:
        return
    st.subheader("Judge panels next to their members")
    by_run = {j.source.run_id: j for j in report.judges if j.source.run_id is not None}
    for panel in found:
        source = panel.source
        with st.container(border=True):
            st.markdown(f"**{safe_text.md(source.label)}**")
            rows = [_row(panel, "panel")] + [
                _row(by_run[rid], "member") for rid in source.member_run_ids if rid in by_run]
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
            st.caption("κ, macro-F1 and agreement against the human verdicts on the same "
                       "reviewed (response, criterion) pairs each judge answered; a panel's "
                       "cost is its members' costs added up.")
            render_member_agreement(db, source.panel_id)


def render_member_agreement(db: str, panel_id: int) -> None:
    agreement = panel_readers.get_member_agreement(
        db, panel_id, panel_readers.get_member_stamp(db, (panel_id,)))
    if not agreement:
        return
    low = [a for a in agreement if a.low]
    st.markdown("Agreement among the members, per criterion (Krippendorff's α)")
    st.dataframe(pd.DataFrame([{
        "Criterion": safe_text.text(a.label),
        "α": fmt(a.alpha),
        "Responses": a.units,
        "Flag": "low agreement" if a.low else "",
        "Note": safe_text.text(a.note),
    } for a in agreement]), hide_index=True, width="stretch")
    if low:
        st.warning(
            f"The members read {', '.join(safe_text.md(a.label) for a in low)} differently "
            f"(α below {LOW_MEMBER_AGREEMENT}): the panel's verdict there rests on a vote, "
            "not a consensus. Rewording the criterion may help.",
            icon=":material/flag:")
