"""Agreement page: the human baseline — are the judges as good as a second person?"""

from __future__ import annotations

import streamlit as st

from grading.bootstrap import Interval
from storage.services.agreement import AgreementReport
from storage.services.baseline_grid import BaselineGrid
from storage.services.human_baseline import MARGIN, Figure, HumanBaseline
from ui import agreement_grid, safe_text
from ui.verdict_view import md_escape

POSITION_BADGES = {
    "inside": ":green-badge[inside the people]",
    "above": ":blue-badge[above the people]",
    "below": ":red-badge[below the people]",
    "unclear": ":gray-badge[can't tell yet]",
    "unknown": ":gray-badge[no baseline]",
}


def span(interval: Interval | None, digits: int = 2, unit: str = "") -> str:
    """`` [0.41, 0.80]``: the 95% bootstrap interval, or nothing when there is none."""
    if interval is None:
        return ""
    return f" [{interval.low:.{digits}f}{unit}, {interval.high:.{digits}f}{unit}]"


def value(number: float | None, n: int, interval: Interval | None = None,
          digits: int = 2) -> str:
    if number is None:
        return f"— (n={n})"
    return f"{number:.{digits}f}{span(interval, digits)} (n={n})"


def fig(figure: Figure, digits: int = 2) -> str:
    return value(figure.value, figure.n, figure.interval, digits)


def pct(number: float | None, n: int, interval: Interval | None = None) -> str:
    if number is None:
        return f"— (n={n})"
    return f"{number:.0f}%{span(interval, 0, '%')} (n={n})"


def render_baseline(baseline: HumanBaseline, grid: BaselineGrid | None = None,
                    report: AgreementReport | None = None) -> None:
    st.subheader("Human baseline", anchor=False)
    st.caption("Is each judge as good as a second person? One row per criterion, one cell "
               "per judge: its figure, the 95% interval, n and where it stands against the "
               "people.")
    if not any(len(row.reviewers) >= 2 for row in baseline.criteria) and not (
            grid and grid.has_people):
        st.info("No human baseline yet: it needs at least two reviewers on the same "
                "responses. Set “Reviewers per response” to 2 in the review set (Review page).")
    if grid is not None and report is not None:
        agreement_grid.render_grid(grid, report)
    with st.expander("Every figure, and each judge in words"):
        _render_details(baseline)
    if baseline.reviewers:
        st.markdown("**Reviewers**")
        st.dataframe([
            {"Reviewer": r.name, "Verdicts": r.verdicts, "Responses": r.responses,
             "Median time per response": (f"{r.median_seconds:.0f} s (n={r.timed_responses})"
                                          if r.median_seconds is not None else "—"),
             "Agreement with the final verdict": pct(r.vs_final.percent_agreement,
                                                     r.vs_final.pairs_used,
                                                     r.vs_final_percent_interval),
             "κ with the final verdict": value(r.vs_final.cohens_kappa, r.vs_final.pairs_used,
                                               r.vs_final_kappa_interval)}
            for r in baseline.reviewers], hide_index=True, width="stretch")


def _render_details(baseline: HumanBaseline) -> None:
    st.caption(
        "How far the reviewers agree with each other on each MET/UNMET criterion, and whether "
        "each judge is inside, above or below the people: every reviewer is compared with the "
        "others (their majority) by macro-F1, and so is each judge, on the same responses. "
        "n is the number of MET/UNMET pairs behind each figure; CANNOT ASSESS is left out. "
        "[low, high] is its 95% bootstrap interval (the responses resampled 1,000 times, the "
        "same every time for the same verdicts): with few responses it is wide. A judge is "
        "called above or below only when its interval clears every reviewer's, and inside "
        f"only when its interval lies within {MARGIN:.2f} of the people's figures; "
        "otherwise the page says it can't tell yet, and about how many reviewed responses "
        "would tell.")
    if baseline.left_out:
        st.caption("Rating and category criteria ("
                   + ", ".join(f"“{safe_text.md(label)}”" for label in baseline.left_out)
                   + ") are in the grid above; their other figures (weighted kappa or "
                   "Cohen's kappa, Krippendorff's alpha) are in the per-criterion table.")
    rows = []
    for row in baseline.criteria:
        item = {
            "Criterion": row.criterion.label,
            "Reviewers": len(row.reviewers),
            "Among reviewers": (f"{'κ' if row.method == 'kappa' else 'α'} {fig(row.among)}"
                                if row.method != "none" else "—"),
            "Percent agreement": pct(row.percent.value, row.percent.n, row.percent.interval),
            "People's macro-F1": row.people_spread,
        }
        for judge in row.judges:
            vs = judge.vs_human
            item[f"{judge.label} · κ vs human"] = value(
                vs.cohens_kappa, vs.pairs_used, judge.vs_human_kappa_interval)
            item[f"{judge.label} · macro-F1 vs human"] = value(
                vs.balanced_f1, vs.pairs_used, judge.vs_human_f1_interval)
            item[f"{judge.label} · macro-F1 vs people"] = fig(judge.loo_f1)
        rows.append(item)
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch")
    for row in baseline.criteria:  # per criterion, plainly: inside, above, below, unclear
        for judge in row.judges:
            st.markdown(f"{POSITION_BADGES[judge.position]} **{md_escape(row.criterion.label)}**")
            st.text(judge.sentence)
