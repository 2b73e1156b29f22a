"""The pages' charts as they were built with Altair before session 47 (ui/chart_specs.py
writes them as dicts): the reference their specs are checked against. Altair is installed with
Streamlit; the app no longer imports it."""

from __future__ import annotations

import altair as alt


def spec_of(chart) -> dict:
    """The chart's Vega-Lite spec as ``ui.kept_charts`` made it from an Altair chart."""
    spec = chart.to_dict()
    _drop_theme_config(spec)
    return spec


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


def _cost_chart(points: tuple[tuple[str, str, float, float], ...]):
    rows = [{"Judge": judge, "Name": name, "cost": cost, "kappa": kappa}
            for judge, name, cost, kappa in points]
    widest = max(cost for _, _, cost, _ in points) * 1.15 or 1.0
    base = alt.Chart(alt.NamedData("judges")).encode(
        x=alt.X("cost:Q", title="Cost per grade (USD)",
                scale=alt.Scale(domain=[0, widest], nice=False)),
        y=alt.Y("kappa:Q", title="Cohen's κ vs Human", scale=alt.Scale(domain=[-1, 1])),
    )
    # Judges are told apart by colour and shape in a legend, not by text beside the points:
    # judges of similar cost and agreement would write over each other.
    chart = base.mark_point(size=120, filled=True).encode(
        color=alt.Color("Judge:N", scale=alt.Scale(scheme="tableau10"),
                        legend=alt.Legend(orient="right", labelLimit=260)),
        shape=alt.Shape("Judge:N"),
        tooltip=["Name:N", alt.Tooltip("cost:Q", format=".4f"),
                 alt.Tooltip("kappa:Q", format=".2f")])
    return (chart.properties(height=260, title="Cheaper and as good is top left"),
            {"judges": rows})


def _histogram(bins: tuple[tuple[float, float, int], ...], title: str):
    chart = alt.Chart(alt.NamedData("bins")).mark_bar().encode(
        x=alt.X("from:Q", bin="binned", title=None,
                scale=alt.Scale(domain=[bins[0][0], bins[-1][1]])), x2="to:Q",
        y=alt.Y("responses:Q", title=None, axis=alt.Axis(tickMinStep=1)),
        tooltip=[alt.Tooltip("from:Q", format=".2f"), alt.Tooltip("to:Q", format=".2f"),
                 "responses:Q"],
    ).properties(title=title)
    return chart, {"bins": [{"from": low, "to": high, "responses": count}
                            for low, high, count in bins]}


def _drop_theme_config(spec: dict) -> None:
    # Altair's active theme writes its defaults (the default theme: a 300 x 300 view) into
    # every spec; Streamlit's own Altair path turns the theme off and applies its own. Left in,
    # they would size the charts differently from before.
    theme = alt.theme.get()
    added = (theme() if theme else {}).get("config", {})
    config = spec.get("config", {})
    for section, values in added.items():
        mine = config.get(section)
        if not isinstance(mine, dict) or not isinstance(values, dict):
            continue
        for key, value in values.items():
            if mine.get(key) == value:
                del mine[key]
        if not mine:
            del config[section]
    if "config" in spec and not config:
        del spec["config"]
