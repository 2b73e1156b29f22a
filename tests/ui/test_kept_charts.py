"""Charts drawn from kept Vega-Lite specs (ui/kept_charts.py, written by ui/chart_specs.py):
the same picture as ``st.altair_chart`` of the Altair chart they replace over a DataFrame
(tests/ui/altair_charts.py), built once per distinct figures."""

from __future__ import annotations

import json

import pyarrow
from streamlit.testing.v1 import AppTest


def _charts(at: AppTest) -> list[tuple[str, list[list[dict]]]]:
    """Each chart's spec (its datasets' names replaced by their order) and its rows."""
    out = []
    for chart in at.get("vega_lite_chart"):
        text = chart.proto.spec
        for index, dataset in enumerate(chart.proto.datasets):
            text = text.replace(dataset.name, f"data{index}")
        rows = [pyarrow.ipc.open_stream(d.data.data).read_pandas().to_dict("records")
                for d in chart.proto.datasets]
        out.append((json.dumps(json.loads(text), sort_keys=True), rows))
    return out


def _both_ways():
    import altair as alt
    import pandas as pd
    import streamlit as st

    from tests.ui import altair_charts
    from ui import chart_specs, kept_charts

    grid = ((7, 1), (0, 2))
    kept_charts.show(chart_specs.confusion, ("MET", "UNMET"), grid, "Run 1",
                     "Human", 7, "All criteria (n=10)", width="content")
    chart, data = altair_charts._confusion_chart(("MET", "UNMET"), grid, "Run 1",
                                                 "Human", 7, "All criteria (n=10)")
    st.altair_chart(chart.properties(data=pd.DataFrame(data["cells"])), width="content")
    bins = ((0.0, 0.5, 3), (0.5, 1.0, 4))
    kept_charts.show(chart_specs.histogram, bins, "Run 1", width="stretch", height=200)
    chart, data = altair_charts._histogram(bins, "Run 1")
    st.altair_chart(chart.properties(data=pd.DataFrame(data["bins"])), width="stretch",
                    height=200)
    assert alt.theme.active == "default"  # the app's theme is Altair's own


def test_a_kept_chart_is_the_chart_streamlit_draws_from_altair():
    at = AppTest.from_function(_both_ways).run()
    assert not at.exception
    confusion_kept, confusion_altair, histogram_kept, histogram_altair = _charts(at)
    assert confusion_kept == confusion_altair
    assert histogram_kept == histogram_altair
    # Altair's default theme (a 300 x 300 view) is not written into the kept spec, as
    # Streamlit leaves it out of its own
    assert "continuousWidth" not in confusion_kept[0]
    assert confusion_kept[1] == [[{"row": "MET", "col": "MET", "count": 7},
                                  {"row": "MET", "col": "UNMET", "count": 1},
                                  {"row": "UNMET", "col": "MET", "count": 0},
                                  {"row": "UNMET", "col": "UNMET", "count": 2}]]


def _builder(count: int):
    import streamlit as st
    st.session_state["built"] = st.session_state.get("built", 0) + 1
    return ({"data": {"name": "bars"}, "mark": "bar",
             "encoding": {"x": {"field": "n", "type": "quantitative"}}},
            {"bars": [{"n": count}]})


def test_a_chart_is_built_once_per_figures_and_again_when_they_change():
    from ui import kept_charts

    kept_charts.forget()

    def script():
        import streamlit as st

        from tests.ui.test_kept_charts import _builder
        from ui import kept_charts
        kept_charts.show(_builder, st.session_state.get("figure", 1))

    at = AppTest.from_function(script).run()
    at.run()
    assert at.session_state["built"] == 1  # the rerun drew the kept spec
    at.session_state["figure"] = 2
    at.run()
    assert at.session_state["built"] == 2  # new figures: a new chart
    assert _charts(at)[0][1] == [[{"n": 2}]]


def test_the_kept_specs_stay_within_their_budget(monkeypatch):
    from ui import kept_charts

    kept_charts.forget()
    first = kept_charts._bytes(kept_charts.kept(_points, 1_000))
    monkeypatch.setattr(kept_charts, "BUDGET", int(2.5 * first))  # two, not three
    for count in range(1_001, 1_010):  # each saved verdict: a new score chart
        kept_charts.kept(_points, count)
    assert len(kept_charts._kept) == 2
    assert kept_charts._size == sum(map(kept_charts._bytes, kept_charts._kept.values()))
    assert [figures for _, figures in kept_charts._kept] == [(1_008,), (1_009,)]


def _points(count: int):
    return ({"data": {"name": "points"}, "mark": "point",
             "encoding": {"x": {"field": "x", "type": "quantitative"},
                          "y": {"field": "y", "type": "quantitative"}}},
            {"points": [{"x": i, "y": count} for i in range(1_000)]})
