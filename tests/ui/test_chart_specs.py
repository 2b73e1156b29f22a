"""The pages' charts written as Vega-Lite dicts (ui/chart_specs.py) are the specs the Altair
charts they replace gave (tests/ui/altair_charts.py), key for key, with the same rows: the
browser draws the same pictures. And the app's pages no longer import Altair (~24 MB held
by the app's process for its life, issue 41)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.ui import altair_charts as before
from ui import chart_specs

ROOT = Path(__file__).resolve().parents[2]


def _same(new, old) -> None:
    (spec, rows), (chart, old_rows) = new, old
    assert spec == before.spec_of(chart)
    assert rows == old_rows


@pytest.mark.parametrize("order", [("a", "b"), ("#1 judge", "#2 other", "Human", "#4", "#5")])
def test_the_kappa_matrix(order):
    cells = tuple((a, b, None if a == b else (i - j) / 7, "—" if a == b else f"0.5\nn={i}")
                  for i, a in enumerate(order) for j, b in enumerate(order))
    _same(chart_specs.matrix(order, cells), before._matrix_chart(order, cells))


@pytest.mark.parametrize(("shown", "most"), [
    (("MET", "UNMET"), 4), (("MET", "UNMET"), 5), (("MET", "UNMET"), 1),
    (("low", "mid", "high"), 7), (("a", "b", "c", "d"), 123_457),
])
def test_a_confusion_matrix(shown, most):
    grid = tuple(tuple((i * 3 + j) % (most + 1) for j in range(len(shown)))
                 for i in range(len(shown)))
    args = (shown, grid, "#1 · judge", "Human", most, "All criteria (κ, n=12)")
    _same(chart_specs.confusion(*args), before._confusion_chart(*args))


@pytest.mark.parametrize("points", [
    (("#1 judge", 0.2, 0.3, "r1"),),
    (("#1 judge", -0.5, 1.4, "r1"), ("#2", 0.75, 0.0, "#7"), ("#1 judge", 1.0, 1.0, "x")),
])
def test_judge_against_human_scores(points):
    _same(chart_specs.scores(points), before._scores_chart(points))


@pytest.mark.parametrize("points", [
    (("j", "J", 0.1, 0.5), ("k", "K", 0.2, -0.6)),
    (("j", "J", 0.0, 0.5), ("k", "K", 0.0, 0.1)),  # free judges: the axis goes to 1
])
def test_agreement_beside_cost(points):
    _same(chart_specs.cost(points), before._cost_chart(points))


@pytest.mark.parametrize("bins", [
    ((0.0, 0.5, 3), (0.5, 1.0, 4)),
    ((-2.0, -1.25, 0), (-1.25, 7.5, 1_000_000)),
])
def test_a_score_histogram(bins):
    _same(chart_specs.histogram(bins, "#1 · judge"), before._histogram(bins, "#1 · judge"))


def test_the_pages_do_not_import_altair():
    code = ("import sys; import ui.app_pages; import ui.kept_charts, ui.agreement_charts, "
            "ui.agreement_judges, ui.results_table, ui.chart_specs; "
            "print('altair' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                           text=True, check=True)
    assert found.stdout.strip() == "False", found.stderr
