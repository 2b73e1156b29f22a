"""Agreement page, the pictures: the header figures, the kappa matrix, the confusion
matrices and judge-vs-human scores."""

from __future__ import annotations

import altair as alt
import streamlit as st

from storage.services.agreement import AgreementReport
from ui import kept_charts, safe_text
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
    kept_charts.show(_matrix_chart, tuple(order),
                     tuple((c["A"], c["B"], c["kappa"], c["text"]) for c in cells),
                     width="stretch")
    st.caption("Each cell: Cohen's κ and n, the (response, criterion) pairs both sources "
               "answered MET or UNMET. CANNOT_ASSESS is left out.")
    for note in notes:
        st.caption(f":material/info: {note}")

def _matrix_chart(order: tuple[str, ...], cells: tuple[tuple, ...]):
    rows = [{"A": a, "B": b, "kappa": None if kappa is None else float(kappa), "text": text}
            for a, b, kappa, text in cells]
    base = alt.Chart(alt.NamedData("cells")).encode(
        # Slanted column labels: side by side, long source names would run into each other.
        # Every one drawn: Vega tests overlap on the slanted labels' upright boxes and hid
        # every other source's name (#1 and #3 of five at 1280 px), though slanted they
        # stand a column's width x sin 30° (~57 px at 1280) apart, far more than a line.
        x=alt.X("B:N", sort=list(order), title=None,
                axis=alt.Axis(orient="top", labelAngle=-30, labelAlign="left",
                              labelBaseline="middle", labelLimit=240, labelOverlap=False)),
        y=alt.Y("A:N", sort=list(order), title=None, axis=alt.Axis(labelLimit=320)),
    )
    chart = (
        base.mark_rect(color="#eeeeee", stroke="white")
        + base.mark_rect(stroke="white").encode(color=alt.Color(
            "kappa:Q", title="κ", scale=alt.Scale(domain=[-1, 1], scheme="redyellowgreen"),
            # no longer than the matrix, or its lowest label (-1) is cut off
            legend=alt.Legend(gradientLength=min(200, 45 * len(order)))))
        + base.mark_text(fontSize=14, lineBreak="\n").encode(text="text:N")
    )
    return chart.properties(height=90 * len(order) + 40), {"cells": rows}


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
                    _confusion_chart, shown, tuple(tuple(int(c) for c in row) for row in grid),
                    compact(source_a), compact(source_b), max(result.confusion.total, 1),
                    f"{title} ({metric}n={result.pairs_used})", width="content")


def _confusion_chart(shown: tuple[str, ...], grid: tuple[tuple[int, ...], ...], label_a: str,
                     label_b: str, most: int, title: str):
    cells = [
        {"row": ra, "col": cb, "count": count}
        for ra, counts in zip(shown, grid, strict=True)
        for cb, count in zip(shown, counts, strict=True)
    ]
    base = alt.Chart(alt.NamedData("cells")).encode(
        x=alt.X("col:N", sort=list(shown), title=label_b,
                axis=alt.Axis(orient="top", labelAngle=0, labelFontSize=12)),
        y=alt.Y("row:N", sort=list(shown), title=label_a, axis=alt.Axis(labelFontSize=12)),
    )
    # A cell with no pairs is drawn empty (outlined), never in a fill colour that reads as
    # "some": with n=0 every cell would otherwise get the scale's colour.
    chart = (
        base.mark_rect(stroke="#d0d0d0", strokeWidth=1).encode(
            color=alt.condition(
                alt.datum.count > 0,
                alt.Color("count:Q", legend=None,
                          scale=alt.Scale(scheme="blues", domain=[0, most])),
                alt.value("white")))
        + base.mark_text(fontSize=18, fontWeight="bold").encode(
            text="count:Q",
            color=alt.when(alt.datum.count > most / 2).then(alt.value("white"))
            .when(alt.datum.count > 0).then(alt.value("black"))
            .otherwise(alt.value("#9e9e9e")))
    ).properties(width=alt.Step(36 if len(shown) > 2 else 62),
                 height=alt.Step(30 if len(shown) > 2 else 48), title=title)
    return chart, {"cells": cells}


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
    kept_charts.show(_scores_chart, points, width="stretch")
    st.caption("Dashed line: judge = human. Points above it: the judge scores higher than "
               "the reviewers. Only fully reviewed responses have a human score.")


def _scores_chart(points: tuple[tuple[str, float, float, str], ...]):
    low = min(min(min(p[1], p[2]) for p in points), 0.0)
    high = max(max(max(p[1], p[2]) for p in points), 1.0)
    low, high = low - 0.03 * (high - low), high + 0.03 * (high - low)  # no clipped points
    axes = {"x": alt.X("x:Q", title="Human score", scale=alt.Scale(domain=[low, high])),
            "y": alt.Y("y:Q", title="Judge score", scale=alt.Scale(domain=[low, high]))}
    diagonal = alt.Chart(alt.NamedData("diagonal")).mark_line(
        strokeDash=[4, 4], color="#999999").encode(**axes)
    dots = alt.Chart(alt.NamedData("points")).mark_point(
        size=110, opacity=0.9, filled=True).encode(
        **axes,
        color=alt.Color("Judge:N", scale=alt.Scale(scheme="tableau10"),
                        legend=alt.Legend(orient="bottom", labelLimit=400, columns=1)),
        shape=alt.Shape("Judge:N"),
        tooltip=["Response:N", "Judge:N", alt.Tooltip("x:Q", title="Human score"),
                 alt.Tooltip("y:Q", title="Judge score")],
    )
    rows = [{"Judge": judge, "x": human, "y": score, "Response": response}
            for judge, human, score, response in points]
    return ((diagonal + dots).properties(height=380),
            {"diagonal": [{"x": low, "y": low}, {"x": high, "y": high}], "points": rows})
