"""The Agreement page's parts on multi-choice criteria: the metric is named and the confusion
matrix is labelled with the criterion's options (report data built by hand: storage of option
verdicts comes with migration 0015)."""

from __future__ import annotations

import json

import pyarrow
from streamlit.testing.v1 import AppTest

from grading.agreement import compare_verdicts
from grading.types import Verdict
from storage.services import agreement
from tests.storage.test_agreement_options import _data
from ui.agreement_text import alpha_name, confusion_grid, kappa_name, verdict_text


def test_the_metric_names_say_which_kappa_and_which_alpha():
    report = agreement.build_report(_data())
    pair = report.pair("human", "run:1")
    assert kappa_name(pair.per_criterion[1]) == "Cohen's kappa"
    assert kappa_name(pair.per_criterion[2]) == "quadratic-weighted kappa"
    assert kappa_name(pair.per_criterion[3]) == "Cohen's kappa"
    assert alpha_name(report.alpha.per_criterion[1]) == "Krippendorff's alpha (nominal)"
    assert alpha_name(report.alpha.per_criterion[2]) == "Krippendorff's alpha (ordinal)"
    assert alpha_name(report.alpha.per_criterion[3]) == "Krippendorff's alpha (nominal)"


def test_the_confusion_grid_is_labelled_by_options_in_the_rubrics_order():
    report = agreement.build_report(_data())
    pair = report.pair("human", "run:1")
    assert confusion_grid(pair.per_criterion[2]) == (
        ("1", "2", "3", "4", "5"),
        ((0, 1, 0, 0, 0), (0, 0, 0, 0, 0), (0, 0, 1, 0, 0), (0, 0, 0, 0, 0), (0, 0, 0, 1, 0)))
    binary = compare_verdicts([Verdict.MET, Verdict.UNMET], [Verdict.MET, Verdict.MET])
    assert confusion_grid(binary) == (("MET", "UNMET"), ((1, 0), (1, 0)))


def test_verdicts_and_labels_show_as_text():
    assert verdict_text(Verdict.MET) == "MET"
    assert verdict_text("4") == "4" and verdict_text(None) == "—"
    assert "\u202e" not in verdict_text("good\u202eevil")  # a label is shown as text


def test_the_confusion_matrices_of_options_name_the_metric_and_the_options():
    def script() -> None:
        from storage.services import agreement
        from tests.storage.test_agreement_options import _data
        from ui.agreement_charts import render_confusion

        render_confusion(agreement.build_report(_data()), "human", "run:1")

    at = AppTest.from_function(script, default_timeout=60).run()
    assert not at.exception, at.exception
    specs = {spec["title"]: spec for spec in (
        json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart"))}
    assert set(specs) == {"All criteria (n=4)", "cites (n=4)",
                          "clarity (quadratic-weighted kappa, n=3)",
                          "tone (Cohen's kappa, n=4)"}

    def axes(spec):
        return spec["layer"][0]["encoding"]["x"]["sort"], spec["layer"][0]["encoding"]["y"]["sort"]

    clarity = specs["clarity (quadratic-weighted kappa, n=3)"]
    assert axes(clarity) == (["1", "2", "3", "4", "5"], ["1", "2", "3", "4", "5"])
    chart = next(c for c in at.get("vega_lite_chart")
                 if json.loads(c.proto.spec)["title"] == "clarity (quadratic-weighted kappa, n=3)")
    frame = pyarrow.ipc.open_stream(chart.proto.datasets[0].data.data).read_pandas()
    cells = {(r["row"], r["col"]): r["count"] for r in frame.to_dict("records")}
    assert cells["1", "2"] == 1 and cells["5", "4"] == 1 and len(cells) == 25
    assert axes(specs["tone (Cohen's kappa, n=4)"])[0] == ["formal", "casual"]
    assert axes(specs["cites (n=4)"])[0] == ["MET", "UNMET"]
