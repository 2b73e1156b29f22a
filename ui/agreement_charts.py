"""Agreement page, the pictures: the header figures, the kappa matrix, the confusion
matrices and judge-vs-human scores."""

from __future__ import annotations

import streamlit as st

from storage.services.agreement import AgreementReport
from ui import chart_specs, kept_charts, safe_text
from ui.agreement_text import EMPTY_HINT, compact, confusion_grid, fmt, kappa_name, short


def render_header(report: AgreementReport) -> None:
    data = report.data
    alpha = report.alpha.overall
    cols = st.columns(4)
    cols[0].metric("Krippendorff's α", fmt(alpha.alpha),
                   help="Nominal alpha over MET/UNMET across every run with per-criterion "
                        "verdicts and the human verdicts. 1 = perfect agreement, 0 = chance.")
    cols[1].metric("Verdict sources", len(data.verdict_sources))
    cols[2].metric("Reviewed responses", data.reviewed_responses,
                   help="Responses with at least one human verdict.")
    cols[3].metric("Fully reviewed", data.fully_reviewed_responses,
                   help="Responses with a human verdict on every criterion: these have a "
                        "human score.")
    details = (f"α uses {alpha.pairable_units} (response, criterion) units with MET/UNMET "
               f"from two or more sources; {alpha.excluded_cannot_assess} CANNOT_ASSESS "
               "verdicts excluded.")
    st.caption(details + (f" **Note:** {alpha.note}." if alpha.note else ""))

def render_matrix(report: AgreementReport) -> None:
    st.subheader("Cohen's κ between sources")
    sources = report.data.verdict_sources
    if len(sources) < 2:
        st.info("Only one source of per-criterion verdicts so far. " + EMPTY_HINT)
        return
    order = [short(s) for s in sources]
    cells, notes = [], []
    for a in sources:
        for b in sources:
            if a.key == b.key:
                cells.append({"A": short(a), "B": short(b), "kappa": None, "text": "—"})
                continue
            result = report.pair(a.key, b.key).overall
            kappa = result.cohens_kappa
            cells.append({"A": short(a), "B": short(b), "kappa": kappa,
                          "text": f"{fmt(kappa)}\nn={result.pairs_used}"})
            if result.note and order.index(short(a)) < order.index(short(b)):
                notes.append(f"{safe_text.md(a.label)} vs {safe_text.md(b.label)}: "
                             f"{result.note}")
    kept_charts.show(chart_specs.matrix, tuple(order),
                     tuple((c["A"], c["B"], c["kappa"], c["text"]) for c in cells),
                     width="stretch")
    st.caption("Each cell: Cohen's κ and n, the (response, criterion) pairs both sources "
               "answered MET or UNMET. CANNOT_ASSESS is left out.")
    for note in notes:
        st.caption(f":material/info: {note}")


def render_confusion(report: AgreementReport, a: str | None, b: str | None) -> None:
    st.subheader("Confusion matrices")
    if a is None or b is None:
        st.caption("Pick two sources under **Compare** to see their confusion matrices.")
        return
    pair = report.pair(a, b)
    source_a, source_b = report.data.source(a), report.data.source(b)
    st.caption(f"Rows: **{safe_text.md(source_a.label)}** · columns: "
               f"**{safe_text.md(source_b.label)}**. Counts of "
               "(response, criterion) pairs; the diagonal is where they agree.")
    names = {c.id: safe_text.text(c.label) for c in report.data.criteria}
    charts = [("All criteria", pair.overall)] + [
        (names[cid], result) for cid, result in pair.per_criterion.items()]
    for start in range(0, len(charts), 4):
        columns = st.columns(4)
        for column, (title, result) in zip(columns, charts[start:start + 4], strict=False):
            # MET/UNMET, or a multi-choice criterion's options in the rubric's order
            labels, grid = confusion_grid(result)
            # a multi-choice criterion's chart names its kappa ("quadratic-weighted kappa")
            metric = f"{kappa_name(result)}, " if hasattr(result, "metric") else ""
            shown = tuple(safe_text.text(label) for label in labels)
            with column:
                kept_charts.show(
                    chart_specs.confusion, shown, tuple(tuple(int(c) for c in row) for row in grid),
                    compact(source_a), compact(source_b), max(result.confusion.total, 1),
                    f"{title} ({metric}n={result.pairs_used})", width="content")


def render_scores(report: AgreementReport) -> None:
    st.subheader("Judge score vs human score")
    if not report.score_points:
        st.info("No response has a human score yet: review every criterion of a few "
                "responses on the **Review** page to compare scores.")
        return
    labels_by_key = {s.key: s.label for s in report.data.sources}
    points = tuple(
        (labels_by_key[p.source_key], float(p.human_score), float(p.judge_score),
         report.data.response_labels[p.response_id])
        for p in report.score_points)
    kept_charts.show(chart_specs.scores, points, width="stretch")
    st.caption("Dashed line: judge = human. Points above it: the judge scores higher than "
               "the reviewers. Only fully reviewed responses have a human score.")
