"""A judge's score column compared with people's scores: read for the responses people
scored (``ScoreColumn.of``), the same figures as comparing the whole column."""

from __future__ import annotations

import math
import random

import pytest

from grading.score_agreement import compare_scores
from storage.services.agreement import _judge_vs_human
from storage.services.score_column import ScoreColumn


def _column(scores: dict[int, float]) -> ScoreColumn:
    ids = sorted(scores)
    return ScoreColumn(ids, [scores[i] for i in ids])


def test_of_reads_the_scores_of_the_ids_here_in_the_order_asked():
    column = _column({2: 0.5, 5: 1.0, 9: 0.25})
    assert list(column.of([9, 3, 2, 10, 0, 5]).items()) == [(9, 0.25), (2, 0.5), (5, 1.0)]
    assert column.of([]) == {}
    assert _column({}).of([1, 2]) == {}


def test_the_comparison_of_a_column_is_the_whole_columns_figure_for_figure():
    rng = random.Random(41)
    judge = {rid: round(rng.random(), 3) for rid in range(0, 3000, 2)}
    # people scored some responses the judge did not, and left some unscored (None)
    human = {rid: (None if rid % 97 == 0 else round(rng.random(), 2))
             for rid in rng.sample(range(3200), 600)}
    column = _column(judge)
    paired, found = _judge_vs_human(human, column)
    assert found == compare_scores(human, column) == compare_scores(human, judge)
    assert found.only_in_b > 0 and found.only_in_a > 0 and found.pearson is not None
    assert paired == {rid: judge[rid] for rid in human if rid in judge}
    assert not isinstance(paired, ScoreColumn)


def test_a_column_with_a_score_that_is_not_finite_is_refused_as_before():
    column = _column({1: 0.5, 2: math.inf, 3: 0.1})
    with pytest.raises(ValueError, match="finite") as whole:
        compare_scores({1: 0.2, 3: 0.4}, column)
    with pytest.raises(ValueError, match="finite") as ours:
        _judge_vs_human({1: 0.2, 3: 0.4}, column)
    assert str(ours.value) == str(whole.value)


def test_keys_that_are_not_plain_ints_and_plain_dicts_take_the_comparison_as_it_is():
    column = _column({1: 0.5, 2: 0.7, 3: 0.1})
    for human in ({True: 0.2, 2: 0.4, 3: 0.9}, {"1": 0.2, 2: 0.4, 3: 0.9}):
        paired, found = _judge_vs_human(human, column)
        assert paired is column and found == compare_scores(human, column)
    judge = {1: 0.5, 2: 0.7}
    assert _judge_vs_human({1: 0.1, 2: 0.3}, judge) == (judge, compare_scores(
        {1: 0.1, 2: 0.3}, judge))
    assert _judge_vs_human({}, column) == (column, None)
