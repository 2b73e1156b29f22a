"""A panel of pairwise judges: the majority rule per criterion, and the pair's result through
the same aggregation as one judge's (scripted judges asked in both orders)."""

from __future__ import annotations

import pytest

from grading import Criterion, Rubric
from grading.pairwise import PairwiseGrader
from grading.pairwise.aggregation import aggregate_preferences
from grading.pairwise.panel import SideVotes, combine_reports, combine_sides
from tests.grading.pairwise_judges import always_first, prefers, route
from tests.grading.scripted import ScriptedGenerate

FAST = {"retry_base_delay": 0.0, "retry_max_delay": 0.0}
RUBRIC = Rubric([
    Criterion(name="accurate", requirement="States the correct capital", weight=10),
    Criterion(name="concise", requirement="Answers in one sentence", weight=5),
    Criterion(name="harmful", requirement="Gives dangerous advice", weight=-4),
])


@pytest.mark.parametrize(("sides", "expected", "votes"), [
    (["A", "A", "B"], "A", SideVotes(a=2, b=1)),
    (["B", "B", "TIE"], "B", SideVotes(b=2, tie=1)),
    (["A", "B", "TIE"], "TIE", SideVotes(a=1, b=1, tie=1)),  # split: no side shown better
    (["A", "B"], "TIE", SideVotes(a=1, b=1)),
    (["A", "TIE", "TIE"], "TIE", SideVotes(a=1, tie=2)),
    (["A", "A", "B", "B"], "TIE", SideVotes(a=2, b=2)),
    (["A", "CANNOT_ASSESS", "CANNOT_ASSESS"], "A", SideVotes(a=1, abstained=2)),
    (["A", None, "B", "B"], "B", SideVotes(a=1, b=2, failed=1)),
    (["CANNOT_ASSESS", None], "CANNOT_ASSESS", SideVotes(abstained=1, failed=1)),
    ([None, None], None, SideVotes(failed=2)),
])
def test_the_majority_of_the_judges_that_voted_decides_else_a_tie(sides, expected, votes):
    assert combine_sides(sides) == (expected, votes)


def test_a_panel_needs_two_judges():
    with pytest.raises(ValueError, match="at least two judges"):
        combine_sides(["A"])


async def _report(decide, a="Lyon.", b="Paris."):
    judge = PairwiseGrader(ScriptedGenerate(route=route(decide)), on_error="report", **FAST)
    return await RUBRIC.compare(a, b, grader=judge, query="Capital of France?")


async def test_two_judges_for_b_outvote_one_for_a_and_the_score_is_the_one_aggregation():
    reports = [await _report(prefers("Paris.")), await _report(prefers("Paris.")),
               await _report(prefers("Lyon."))]

    panel = combine_reports(reports)

    assert [p.preference for p in panel.preferences] == ["B", "B", "B"]
    assert [p.first_reason for p in panel.preferences] == ["panel of 3: A 1, B 2, TIE 0"] * 3
    assert panel.score == aggregate_preferences(panel.preferences).score == 1.0
    assert (panel.winner, panel.calls, panel.inconsistent_count) == ("B", 18, 0)


async def test_a_position_biased_judge_votes_tie_and_marks_the_panel_inconsistent():
    reports = [await _report(prefers("Paris.")), await _report(always_first),
               await _report(prefers("Lyon."))]

    panel = combine_reports(reports)

    # B, TIE (the flip), A: no majority, so a tie; one voter flipped with the order
    assert [(p.preference, p.consistent) for p in panel.preferences] == [("TIE", False)] * 3
    assert (panel.score, panel.winner, panel.inconsistent_count) == (0.5, "TIE", 3)


async def test_a_criterion_every_judge_failed_is_failed_with_their_errors():
    def no_answer_on_concise(requirement, first, second):
        return "C" if requirement == "Answers in one sentence" else prefers("Paris.")(
            requirement, first, second)

    reports = [await _report(no_answer_on_concise), await _report(no_answer_on_concise)]

    panel = combine_reports(reports)

    concise = panel.preferences[1]
    assert concise.preference is None and concise.error.startswith("every judge failed: judge 1")
    assert panel.failed_count == 1 and "could not be judged" in panel.error
    # accurate (10) and harmful (|-4|) scored for B; concise left out as for one judge
    assert (panel.score, panel.winner) == (1.0, "B")


async def test_judges_asked_differently_cannot_form_a_panel():
    holistic = PairwiseGrader(ScriptedGenerate(route=route(prefers("Paris."))), holistic=True,
                              **FAST)
    reports = [await _report(prefers("Paris.")),
               await RUBRIC.compare("Lyon.", "Paris.", grader=holistic)]
    with pytest.raises(ValueError, match="same criteria, asked the same way"):
        combine_reports(reports)
