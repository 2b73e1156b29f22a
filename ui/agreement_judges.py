"""Agreement page, the judges next to their cost: agreement with people per judge."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.services.agreement import AgreementReport
from ui import chart_specs, kept_charts, safe_text
from ui.agreement_text import EMPTY_HINT, compact, fmt, fmt_cost, fmt_pct


def render_judges(report: AgreementReport) -> None:
    st.subheader("Judges: agreement next to cost")
    if not report.judges:
        st.info("No runs yet: " + EMPTY_HINT)
        return
    has_human = any(s.is_human for s in report.data.sources)
    rows = []
    for judge in report.judges:
        s, v, sc = judge.source, judge.verdicts_vs_human, judge.scores_vs_human
        status = "" if s.status == "done" else f" ({s.status})"
        rows.append({
            "Judge": safe_text.text(s.label) + status,
            "Grades": f"{s.grades}" + (f" ({s.failed} failed)" if s.failed else ""),
            "Tokens / grade": fmt(s.tokens_per_grade, 0),
            "Cost": fmt_cost(s.cost)
            + (f" (+{s.unknown_cost_count} unpriced)" if s.cost is not None
               and s.unknown_cost_count else ""),
            "Cost / grade": fmt_cost(s.cost_per_grade),
            "κ vs Human": fmt(v.cohens_kappa) if v else "—",
            "Agreement": fmt_pct(v.percent_agreement) if v else "—",
            "Pairs": v.pairs_used if v else 0,
            "Score r": fmt(sc.pearson) if sc else "—",
            "Score bias": fmt(sc.mean_signed_difference, 3) if sc else "—",
        })
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption("Agreement, κ and pairs: the judge's verdicts against the human verdicts. "
               "Score r: Pearson correlation with the human score; score bias: mean of "
               "judge − human score (positive: the judge is more lenient).")
    for judge in report.judges:
        note = _judge_note(judge, has_human)
        if note:
            st.caption(f":material/info: {safe_text.md(judge.source.label)}: {note}")
    points = [
        # short names on the chart (judges with equal figures sit on one point), the full
        # name in the tooltip
        {"Judge": compact(j.source), "Name": safe_text.text(j.source.label),
         "cost": j.source.cost_per_grade, "kappa": j.verdicts_vs_human.cohens_kappa}
        for j in report.judges
        if j.verdicts_vs_human and j.verdicts_vs_human.cohens_kappa is not None
        and j.source.cost_per_grade is not None
    ]
    if len(points) >= 2:
        kept_charts.show(chart_specs.cost, tuple(
            (p["Judge"], p["Name"], float(p["cost"]), float(p["kappa"])) for p in points),
            width="stretch")


def _judge_note(judge, has_human: bool) -> str:
    if not judge.source.per_criterion:
        return "holistic: scores only"
    if not has_human:
        return "no human verdicts yet"
    notes = [n for n in (judge.verdicts_vs_human.note if judge.verdicts_vs_human else "",
                         judge.scores_vs_human.note if judge.scores_vs_human else "") if n]
    return "; ".join(notes)
