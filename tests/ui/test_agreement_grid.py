"""The Agreement page's human baseline as one criterion x judge grid (issue 35 item 13), with
the rating and category criteria in it (issue 34): every figure with its interval and n, "not
enough reviews" where n is too small, a position only where the intervals support it."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.kinds import seed_grid
from tests.ui.pages import agreement_tab

APP = str(Path(__file__).resolve().parents[2] / "ui" / "app.py")
FIGURE = r"-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\] n=\d+"
CELL = (rf"(● inside|▲ above|▼ below|\? can't tell( \(need ~\d+\))?|no baseline) · {FIGURE}"
        r"|not enough reviews \(n=\d+\)")


def _grid(sessions) -> tuple[AppTest, object]:
    seed_grid(sessions)
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("app_pages/agreement.py")
    agreement_tab(at, "Human baseline")
    grid = next(d.value for d in at.dataframe if "Reviewers agree" in d.value.columns)
    return at, grid.set_index("Criterion")


def test_the_baseline_is_one_row_per_criterion_and_one_cell_per_judge(sessions):
    at, grid = _grid(sessions)
    # every kind of criterion, the rating and category ones too, in the rubric's order
    assert list(grid.index) == ["accurate", "clarity", "tone"]
    assert list(grid["Scale"]) == ["MET/UNMET", "ordinal", "nominal"]
    judges = [c for c in grid.columns if c.startswith("#")]
    assert len(judges) == 2, grid.columns
    for criterion in grid.index:
        for judge in judges:
            assert re.fullmatch(CELL, grid.loc[criterion, judge]), grid.loc[criterion, judge]
    # each figure is shown with its interval and n: the reviewers' too (κ on two reviewers,
    # quadratic-weighted on the rating)
    assert re.fullmatch(rf"κ {FIGURE}", grid.loc["accurate", "Reviewers agree"])
    assert re.fullmatch(rf"κ {FIGURE}", grid.loc["clarity", "Reviewers agree"])
    # the people's own figures (two reviewers: one number for both), with interval and n
    assert re.fullmatch(r"\d\.\d\d \[\d\.\d\d, \d\.\d\d\] \(each of 2 reviewers, n=8\)",
                        grid.loc["clarity", "People (compared with)"])
    # the 48 sentences are folded away, not the page's body
    details = next(e for e in at.expander if e.label.startswith("Every figure"))
    assert details.proto.expanded is False


def test_too_few_shared_reviews_say_not_enough_reviews_and_claim_no_position(sessions):
    _at, grid = _grid(sessions)
    # the two reviewers share 'tone' on two responses only
    assert grid.loc["tone", "Reviewers agree"] == "not enough reviews (n=2)"
    assert grid.loc["tone", "People (compared with)"] == "not enough reviews (n=2)"
    for judge in (c for c in grid.columns if c.startswith("#")):
        cell = grid.loc["tone", judge]
        # no figure and no position from two shared responses
        assert cell == "not enough reviews (n=2)", cell


def test_a_cell_claims_inside_above_or_below_only_when_the_intervals_say_so(sessions):
    from storage.services import agreement, baseline_grid, human_baseline, results
    from storage.services.baseline_decision import MARGIN
    from storage.services.option_loo import leave_one_out

    version = seed_grid(sessions)
    [dataset_id] = {s.dataset_id for s in results.list_result_sets(sessions)}
    report = agreement.agreement_report(sessions, version.id, dataset_id)
    grid = baseline_grid.build_grid(report.data, human_baseline.build_baseline(report.data))
    scale = agreement.criterion_kinds(report.data.criteria)
    seen = []
    for row in grid.rows:
        if row.scale == "MET/UNMET":
            people = next(r.people_f1 for r in human_baseline.build_baseline(
                report.data).criteria if r.criterion.id == row.criterion.id)
        else:
            people, _ = leave_one_out(report.data, row.criterion.id, scale[row.criterion.id],
                                      list(row.cells))
        for cell in row.cells.values():
            seen.append(cell.position)
            if cell.position not in ("inside", "above", "below"):
                continue
            low, high = cell.figure.interval.low, cell.figure.interval.high
            theirs = [f for f in people.values() if f.value is not None]
            assert {"above": low > max(f.interval.high for f in theirs),
                    "below": high < min(f.interval.low for f in theirs),
                    "inside": (low >= min(f.value for f in theirs) - MARGIN
                               and high <= max(f.value for f in theirs) + MARGIN),
                    }[cell.position], (row.criterion.label, cell)
    # eight responses: the page can't tell on most, and says so
    assert "unclear" in seen and "unknown" in seen, seen
