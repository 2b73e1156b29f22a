"""The pages' charts as Vega-Lite specs, written as the dicts Streamlit draws
(``st.vega_lite_chart``), over named datasets (``ui.kept_charts`` sends their rows as Arrow).

Written here rather than built with Altair: importing Altair (its schema classes and their
validator) held ~24 MB in the app's process for its whole life, every page's share of the
500 MB at 100,000 responses (issue 41, session 47), to make a handful of small dicts. Each
spec is the one the Altair chart gave, key for key (tests/ui/test_chart_specs.py builds both).
"""

from __future__ import annotations

from typing import Any

Spec = dict[str, Any]
Datasets = dict[str, list[dict]]
# the Vega-Lite version the specs are written for (the one Altair wrote in them)
SCHEMA = "https://vega.github.io/schema/vega-lite/v6.4.1.json"


def _named(spec: Spec, data: str | None = None) -> Spec:
    if data is not None:
        spec["data"] = {"name": data}
    spec["$schema"] = SCHEMA
    return spec


def _field(name: str, kind: str, **more: Any) -> dict:
    return {"field": name, "type": kind, **more}


def matrix(order: tuple[str, ...], cells: tuple[tuple, ...]) -> tuple[Spec, Datasets]:
    """Cohen's kappa of every pair of sources: a coloured cell with kappa and n each."""
    rows = [{"A": a, "B": b, "kappa": None if kappa is None else float(kappa), "text": text}
            for a, b, kappa, text in cells]
    # Slanted column labels: side by side, long source names would run into each other.
    # Every one drawn: Vega tests overlap on the slanted labels' upright boxes and hid
    # every other source's name (#1 and #3 of five at 1280 px), though slanted they
    # stand a column's width x sin 30° (~57 px at 1280) apart, far more than a line.
    axes = {
        "x": _field("B", "nominal", sort=list(order), title=None, axis={
            "orient": "top", "labelAngle": -30, "labelAlign": "left",
            "labelBaseline": "middle", "labelLimit": 240, "labelOverlap": False}),
        "y": _field("A", "nominal", sort=list(order), title=None, axis={"labelLimit": 320}),
    }
    # no longer than the matrix, or its lowest label (-1) is cut off
    colour = _field("kappa", "quantitative", title="κ",
                    scale={"domain": [-1, 1], "scheme": "redyellowgreen"},
                    legend={"gradientLength": min(200, 45 * len(order))})
    spec = {"layer": [
        {"mark": {"type": "rect", "color": "#eeeeee", "stroke": "white"},
         "encoding": {**axes}},
        {"mark": {"type": "rect", "stroke": "white"}, "encoding": {"color": colour, **axes}},
        {"mark": {"type": "text", "fontSize": 14, "lineBreak": "\n"},
         "encoding": {"text": _field("text", "nominal"), **axes}},
    ], "height": 90 * len(order) + 40}
    return _named(spec, "cells"), {"cells": rows}


def confusion(shown: tuple[str, ...], grid: tuple[tuple[int, ...], ...], label_a: str,
              label_b: str, most: int, title: str) -> tuple[Spec, Datasets]:
    """One pair's confusion matrix on one criterion: counts, darker for more."""
    cells = [{"row": ra, "col": cb, "count": count}
             for ra, counts in zip(shown, grid, strict=True)
             for cb, count in zip(shown, counts, strict=True)]
    axes = {
        "x": _field("col", "nominal", sort=list(shown), title=label_b,
                    axis={"orient": "top", "labelAngle": 0, "labelFontSize": 12}),
        "y": _field("row", "nominal", sort=list(shown), title=label_a,
                    axis={"labelFontSize": 12}),
    }
    # A cell with no pairs is drawn empty (outlined), never in a fill colour that reads as
    # "some": with n=0 every cell would otherwise get the scale's colour.
    fill = {"condition": {"test": "(datum.count > 0)", **_field(
        "count", "quantitative", legend=None, scale={"scheme": "blues", "domain": [0, most]})},
        "value": "white"}
    ink = {"condition": [{"test": f"(datum.count > {most / 2!r})", "value": "white"},
                         {"test": "(datum.count > 0)", "value": "black"}],
           "value": "#9e9e9e"}
    two = len(shown) <= 2
    spec = {"layer": [
        {"mark": {"type": "rect", "stroke": "#d0d0d0", "strokeWidth": 1},
         "encoding": {"color": fill, **axes}},
        {"mark": {"type": "text", "fontSize": 18, "fontWeight": "bold"},
         "encoding": {"color": ink, "text": _field("count", "quantitative"), **axes}},
    ], "width": {"step": 62 if two else 36}, "height": {"step": 48 if two else 30},
        "title": title}
    return _named(spec, "cells"), {"cells": cells}


def scores(points: tuple[tuple[str, float, float, str], ...]) -> tuple[Spec, Datasets]:
    """Judge score against human score per response, with the diagonal judge = human."""
    low = min(min(min(p[1], p[2]) for p in points), 0.0)
    high = max(max(max(p[1], p[2]) for p in points), 1.0)
    low, high = low - 0.03 * (high - low), high + 0.03 * (high - low)  # no clipped points
    axes = {"x": _field("x", "quantitative", title="Human score",
                        scale={"domain": [low, high]}),
            "y": _field("y", "quantitative", title="Judge score",
                        scale={"domain": [low, high]})}
    diagonal = {"data": {"name": "diagonal"},
                "mark": {"type": "line", "strokeDash": [4, 4], "color": "#999999"},
                "encoding": {**axes}}
    dots = {"data": {"name": "points"},
            "mark": {"type": "point", "size": 110, "opacity": 0.9, "filled": True},
            "encoding": {
                **axes,
                "color": _field("Judge", "nominal", scale={"scheme": "tableau10"},
                                legend={"orient": "bottom", "labelLimit": 400,
                                        "columns": 1}),
                "shape": _field("Judge", "nominal"),
                "tooltip": [_field("Response", "nominal"), _field("Judge", "nominal"),
                            _field("x", "quantitative", title="Human score"),
                            _field("y", "quantitative", title="Judge score")]}}
    rows = [{"Judge": judge, "x": human, "y": score, "Response": response}
            for judge, human, score, response in points]
    return (_named({"layer": [diagonal, dots], "height": 380}),
            {"diagonal": [{"x": low, "y": low}, {"x": high, "y": high}], "points": rows})


def cost(points: tuple[tuple[str, str, float, float], ...]) -> tuple[Spec, Datasets]:
    """Each judge's kappa against people beside its cost per grade."""
    rows = [{"Judge": judge, "Name": name, "cost": cost, "kappa": kappa}
            for judge, name, cost, kappa in points]
    widest = max(cost for _, _, cost, _ in points) * 1.15 or 1.0
    # Judges are told apart by colour and shape in a legend, not by text beside the points:
    # judges of similar cost and agreement would write over each other.
    spec = {"mark": {"type": "point", "size": 120, "filled": True}, "encoding": {
        "x": _field("cost", "quantitative", title="Cost per grade (USD)",
                    scale={"domain": [0, widest], "nice": False}),
        "y": _field("kappa", "quantitative", title="Cohen's κ vs Human",
                    scale={"domain": [-1, 1]}),
        "color": _field("Judge", "nominal", scale={"scheme": "tableau10"},
                        legend={"orient": "right", "labelLimit": 260}),
        "shape": _field("Judge", "nominal"),
        "tooltip": [_field("Name", "nominal"),
                    _field("cost", "quantitative", format=".4f"),
                    _field("kappa", "quantitative", format=".2f")]},
        "height": 260, "title": "Cheaper and as good is top left"}
    return _named(spec, "judges"), {"judges": rows}


def histogram(bins: tuple[tuple[float, float, int], ...], title: str) -> tuple[Spec, Datasets]:
    """Responses per score bin."""
    spec = {"mark": {"type": "bar"}, "encoding": {
        "x": _field("from", "quantitative", bin="binned", title=None,
                    scale={"domain": [bins[0][0], bins[-1][1]]}),
        "x2": {"field": "to"},
        "y": _field("responses", "quantitative", title=None, axis={"tickMinStep": 1}),
        "tooltip": [_field("from", "quantitative", format=".2f"),
                    _field("to", "quantitative", format=".2f"),
                    _field("responses", "quantitative")]},
        "title": title}
    return _named(spec, "bins"), {"bins": [{"from": low, "to": high, "responses": count}
                                           for low, high, count in bins]}
