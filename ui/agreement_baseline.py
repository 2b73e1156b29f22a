"""Agreement page: the human baseline — are the judges as good as a second person?"""

from __future__ import annotations

import streamlit as st

from storage.services.human_baseline import Figure, HumanBaseline

POSITION_BADGES = {
    "inside": ":green-badge[inside the people's range]",
    "above": ":blue-badge[above the people's range]",
    "below": ":red-badge[below the people's range]",
    "unknown": ":gray-badge[no baseline]",
}


def fig(figure: Figure, digits: int = 2) -> str:
    if figure.value is None:
        return f"— (n={figure.n})"
    return f"{figure.value:.{digits}f} (n={figure.n})"


def pct(value: float | None, n: int) -> str:
    return f"— (n={n})" if value is None else f"{value:.0f}% (n={n})"


def render_baseline(baseline: HumanBaseline) -> None:
    st.subheader("Human baseline", anchor=False)
    st.caption(
        "How far the reviewers agree with each other on each criterion, and whether each "
        "judge is inside, above or below the range of the people: every reviewer is compared "
        "with the others (their majority) by macro-F1, and so is each judge, on the same "
        "responses. n is the number of MET/UNMET pairs behind each figure; CANNOT ASSESS is "
        "left out.")
    if not any(len(row.reviewers) >= 2 for row in baseline.criteria):
        st.info("No human baseline yet: it needs at least two reviewers on the same "
                "responses. Set “Reviewers per response” to 2 in the review set (Review page).")
    rows = []
    for row in baseline.criteria:
        span = row.people_range
        item = {
            "Criterion": row.criterion.label,
            "Reviewers": len(row.reviewers),
            "Among reviewers": (f"{'κ' if row.method == 'kappa' else 'α'} {fig(row.among)}"
                                if row.method != "none" else "—"),
            "Percent agreement": pct(row.percent.value, row.percent.n),
            "People's macro-F1": (f"{span[0]:.2f}–{span[1]:.2f}" if span else "—"),
        }
        for judge in row.judges:
            vs = judge.vs_human
            item[f"{judge.label} · κ vs human"] = (
                f"{vs.cohens_kappa:.2f} (n={vs.pairs_used})" if vs.cohens_kappa is not None
                else f"— (n={vs.pairs_used})")
            item[f"{judge.label} · macro-F1 vs people"] = fig(judge.loo_f1)
        rows.append(item)
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch")
    for row in baseline.criteria:
        for judge in row.judges:
            st.markdown(f"{POSITION_BADGES[judge.position]} ", help=None)
            st.text(judge.sentence)
    if baseline.reviewers:
        st.markdown("**Reviewers**")
        st.dataframe([
            {"Reviewer": r.name, "Verdicts": r.verdicts, "Responses": r.responses,
             "Median time per response": (f"{r.median_seconds:.0f} s (n={r.timed_responses})"
                                          if r.median_seconds is not None else "—"),
             "Agreement with the final verdict": pct(r.vs_final.percent_agreement,
                                                     r.vs_final.pairs_used),
             "κ with the final verdict": (f"{r.vs_final.cohens_kappa:.2f}"
                                          if r.vs_final.cohens_kappa is not None else "—")}
            for r in baseline.reviewers], hide_index=True, width="stretch")
