"""The criteria table's rules, without a browser: rows -> criteria, problems by row, summary."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from grading.types import Criterion
from ui.criteria_table import from_frame, marked_frame, summarize, to_frame

BASE = [
    Criterion(name="a", requirement="Does a", weight=10, section="S"),
    Criterion(name="b", requirement="Does b", weight=-4),
]


def _frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def test_round_trip_keeps_every_field():
    criteria, problems = from_frame(to_frame(BASE))
    assert (criteria, problems) == (BASE, [])


def test_marked_frame_spells_out_penalties():
    assert marked_frame(BASE)["kind"].tolist() == ["earns", "penalty"]


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        pytest.param({"requirement": "x", "weight": None}, "weight", "a weight is needed",
                     id="missing-weight"),
        pytest.param({"requirement": "x", "weight": math.nan}, "weight", "a weight is needed",
                     id="nan-weight"),
        pytest.param({"requirement": "x", "weight": "ten"}, "weight", "must be a number",
                     id="text-weight"),
        pytest.param({"requirement": "x", "weight": math.inf}, "weight", "finite",
                     id="infinite-weight"),
        pytest.param({"requirement": "  ", "weight": 1}, "requirement", "write what",
                     id="blank-requirement"),
        pytest.param({"requirement": "x", "weight": 1, "position": "first"}, "position",
                     "must be a number", id="text-position"),
    ],
)
def test_each_problem_names_its_row_and_column(row, field, message):
    frame = _frame({"name": "ok", "requirement": "fine", "weight": 1}, {"name": "bad", **row})
    criteria, problems = from_frame(frame)
    assert [(p.row, p.label, p.field) for p in problems] == [(2, "'bad'", field)]
    assert message in problems[0].message
    assert [c.name for c in criteria] == ["ok"]


def test_duplicate_names_point_at_the_first_use():
    _, problems = from_frame(_frame({"name": "x", "requirement": "a", "weight": 1},
                                    {"name": "x", "requirement": "b", "weight": 1}))
    assert str(problems[0]) == "Row 2 ('x') · name: 'x' is already used by row 1"


def test_blank_rows_are_ignored_and_an_empty_table_is_a_problem():
    criteria, problems = from_frame(_frame({"name": "", "requirement": None, "weight": None}))
    assert criteria == []
    assert [p.message for p in problems] == ["add at least one criterion"]


def test_positions_order_the_criteria_and_rows_without_one_go_last():
    frame = _frame({"position": 2, "requirement": "second", "weight": 1},
                   {"position": None, "requirement": "last", "weight": 1},
                   {"position": 1, "requirement": "first", "weight": 1})
    criteria, _ = from_frame(frame)
    assert [c.requirement for c in criteria] == ["first", "second", "last"]


def test_summary_comes_from_the_aggregation_rules():
    summary = summarize([*BASE, Criterion(requirement="unscored", weight=0)])
    assert (summary.positive_weight, summary.penalty_weight, summary.penalty_count) == (
        10, 4, 1)
    assert (summary.criteria_count, summary.section_count) == (3, 1)
    assert (summary.best.score, summary.best.raw_score) == (1.0, 10)
    assert (summary.worst.score, summary.worst.raw_score) == (0.0, -4)
    assert summary.all_met.score == pytest.approx(0.6)


def test_a_rubric_of_penalties_only_scores_one_when_nothing_is_triggered():
    summary = summarize([Criterion(requirement="rude", weight=-3)])
    assert (summary.best.score, summary.worst.score) == (1.0, 0.0)


def test_unnamed_rows_are_labelled_by_their_requirement():
    _, problems = from_frame(_frame(
        {"requirement": "Mentions the refund window of five to seven days", "weight": None},
        {"requirement": "", "weight": 2, "name": None},
    ))
    assert [p.label for p in problems] == ["“Mentions the refund window of …”", "new row"]


def test_options_follow_their_row_by_index_label_after_a_row_is_deleted():
    from ui.option_presets import PRESETS, option_rows

    rated = [Criterion(name="c", requirement="Does c", options=PRESETS["Likert 1-4"],
                       required=True),
             Criterion(name="d", requirement="Does d", options=PRESETS["Pass / partial / fail"],
                       scale_type="nominal")]
    frame = to_frame([BASE[0], *rated])
    options = {1: option_rows(rated[0].options), 2: option_rows(rated[1].options)}
    assert from_frame(frame, options) == ([BASE[0], *rated], [])
    without_first = frame.drop(index=0)  # the data editor keeps the other rows' labels
    assert from_frame(without_first, options) == (rated, [])


def test_a_rating_without_options_and_an_na_option_without_value():
    frame = to_frame([BASE[0]])
    frame.loc[0, "judged_as"] = "rating"
    criteria, problems = from_frame(frame, {})
    assert criteria == [] and [p.message for p in problems] == [
        "add its options in the table below the criteria, or judge it MET/UNMET"]
    rows = [{"label": "Yes", "value": 1.0, "na": False}, {"label": "No", "value": 0.0},
            {"label": "Not asked", "value": None, "na": True}, {"label": "", "value": None}]
    [criterion], problems = from_frame(frame, {0: rows})
    assert problems == []
    assert [(o.label, o.na) for o in criterion.options] == [
        ("Yes", False), ("No", False), ("Not asked", True)]


def test_an_option_without_a_label_or_with_text_as_value_is_named():
    frame = to_frame([BASE[0]])
    frame.loc[0, "judged_as"] = "category"
    rows = [{"label": "", "value": 0.5}, {"label": "Yes", "value": "lots"},
            {"label": "No", "value": 0.0}]
    _, problems = from_frame(frame, {0: rows})
    assert [(p.row, p.label, p.field, p.message) for p in problems] == [
        (1, "'a'", "options", "option 1 needs a label"),
        (1, "'a'", "options", "option 'Yes': the value must be a number, got 'lots'")]
