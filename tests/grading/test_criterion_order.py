"""Shuffling the criteria of a one-shot prompt per response (grading.criterion_order): the
order is reproducible, each verdict maps back to its criterion and records where it was
listed, and graders that ask about one criterion at a time refuse the option."""

from __future__ import annotations

import json
import re

import pytest

from grading.autograders import PerCriterionGrader, PerCriterionOneShotGrader
from grading.criterion_order import criterion_order
from grading.errors import ConfigurationError
from grading.options import CriterionOption
from grading.types import Criterion, Verdict
from tests.grading.scripted import ScriptedGenerate

CRITERIA = [Criterion(name=f"c{i}", requirement=f"Requirement number {i}", weight=i + 1)
            for i in range(5)]


def listed(prompt: str) -> list[str]:
    """The requirements in the order the prompt lists them."""
    return re.findall(r"(Requirement number \d)", prompt[prompt.index("<criteria>"):])


def by_position(met_at: int = 1):
    """A judge that answers by position only: MET for the criterion listed at ``met_at``,
    UNMET for every other."""
    def route(prompt: str) -> str:
        count = prompt[prompt.index("<criteria>"):].count("<criterion number=")
        return json.dumps({"criteria": [
            {"number": n, "reason": f"listed {n}", "verdict": "MET" if n == met_at else "UNMET"}
            for n in range(1, count + 1)]})
    return route


async def test_a_judge_answering_by_position_lands_on_the_criterion_listed_there():
    generate = ScriptedGenerate(route=by_position(met_at=1))
    grader = PerCriterionOneShotGrader(generate, shuffle_criteria=True, seed=3)
    firsts = set()
    for text in (f"response {i}" for i in range(8)):
        report = await grader.grade(text, CRITERIA)
        order = listed(generate.calls[-1].user_prompt)
        assert sorted(order) == sorted(c.requirement for c in CRITERIA)
        for item in report.report:  # in the rubric's order, each with its listed position
            assert item.requirement == order[item.prompt_position - 1]
            assert item.verdict is (Verdict.MET if item.prompt_position == 1 else Verdict.UNMET)
            assert item.reason == f"listed {item.prompt_position}"
        assert [r.requirement for r in report.report] == [c.requirement for c in CRITERIA]
        assert sorted(r.prompt_position for r in report.report) == [1, 2, 3, 4, 5]
        firsts.add(order[0])
        # the score is the rubric's: the one MET criterion's weight over the total
        met = next(r for r in report.report if r.verdict is Verdict.MET)
        assert report.score == pytest.approx(met.weight / 15)
    assert len(firsts) > 1  # the order differs between responses


async def test_the_order_is_a_function_of_seed_and_response():
    generate = ScriptedGenerate(route=by_position())
    grader = PerCriterionOneShotGrader(generate, shuffle_criteria=True, seed=3)
    await grader.grade("same text", CRITERIA)
    await grader.grade("same text", CRITERIA)
    again = PerCriterionOneShotGrader(generate, shuffle_criteria=True, seed=3)
    await again.grade("same text", CRITERIA)
    assert len({c.user_prompt for c in generate.calls}) == 1  # the cache key stays valid
    assert criterion_order(CRITERIA, shuffle=False) == (0, 1, 2, 3, 4)
    orders = {criterion_order(CRITERIA, shuffle=True, seed=3, salt=f"r{i}") for i in range(20)}
    assert len(orders) > 10


async def test_without_the_option_nothing_changes_and_no_position_is_recorded():
    generate = ScriptedGenerate(route=by_position())
    report = await PerCriterionOneShotGrader(generate).grade("text", CRITERIA)
    assert listed(generate.calls[0].user_prompt) == [c.requirement for c in CRITERIA]
    assert [r.prompt_position for r in report.report] == [None] * 5
    assert [r.verdict for r in report.report] == [Verdict.MET] + [Verdict.UNMET] * 4


async def test_a_left_out_criterion_is_asked_alone_named_by_its_rubric_number():
    """The judge leaves out what it listed 2nd: that criterion is asked in a call of its
    own, records no position (its verdict did not come from the shuffled prompt), and the
    note names it by its number in the rubric."""
    def route(prompt: str) -> str:
        if "<criteria>" not in prompt:
            return json.dumps({"reason": "alone", "verdict": "MET"})
        count = len(listed(prompt))
        return json.dumps({"criteria": [
            {"number": n, "reason": "r", "verdict": "UNMET"}
            for n in range(1, count + 1) if n != 2]})

    generate = ScriptedGenerate(route=route)
    grader = PerCriterionOneShotGrader(generate, shuffle_criteria=True, seed=1)
    report = await grader.grade("text", CRITERIA)
    order = listed(generate.calls[0].user_prompt)
    second = next(r for r in report.report if r.requirement == order[1])
    assert (second.verdict, second.prompt_position, second.reason) == (Verdict.MET, None,
                                                                       "alone")
    rubric_number = [c.requirement for c in CRITERIA].index(order[1]) + 1
    assert f"left out criterion number(s) {rubric_number} of 5" in report.reason
    others = [r for r in report.report if r is not second]
    assert all(r.verdict is Verdict.UNMET and r.prompt_position for r in others)


async def test_options_keep_their_own_order_under_a_shuffled_criterion_list():
    rated = Criterion(name="tone", requirement="Requirement number 9", weight=1, options=[
        CriterionOption(label="good", value=1.0), CriterionOption(label="poor", value=0.0)])
    criteria = [*CRITERIA[:2], rated]

    def route(prompt: str) -> str:
        entries = []
        for n, requirement in enumerate(listed(prompt), start=1):
            if requirement == rated.requirement:
                entries.append({"number": n, "reason": "r", "option": "poor"})
            else:
                entries.append({"number": n, "reason": "r", "verdict": "MET"})
        return json.dumps({"criteria": entries})

    generate = ScriptedGenerate(route=route)
    grader = PerCriterionOneShotGrader(generate, shuffle_criteria=True, seed=5)
    for text in ("a", "b", "c", "d"):
        report = await grader.grade(text, criteria)
        assert [r.choice for r in report.report] == [Verdict.MET, Verdict.MET, "poor"]


def test_graders_without_a_criterion_list_refuse_the_option():
    with pytest.raises(ConfigurationError, match="no criterion order to shuffle"):
        PerCriterionGrader(ScriptedGenerate(), shuffle_criteria=True)


async def test_calibration_examples_follow_their_criterion_to_its_listed_number():
    """A calibrated one-shot prompt numbers the people's verdicts by where each criterion is
    listed: a shuffled list must not attach one criterion's examples to another."""
    from tests.grading.test_calibration import CRITERIA as TWO
    from tests.grading.test_calibration import _calibration

    generate = ScriptedGenerate(route=by_position())
    grader = PerCriterionOneShotGrader(generate, shuffle_criteria=True, seed=0,
                                       examples=_calibration())
    flipped = 0
    for text in (f"new response {i}" for i in range(6)):
        await grader.grade(text, TWO, response_key=text)
        prompt = generate.calls[-1].user_prompt
        criteria_part = prompt[prompt.index("<criteria>"):]
        dose = re.search(r'<criterion number="(\d)"[^>]*>\nStates the dose', criteria_part)
        harm = re.search(r'<criterion number="(\d)"[^>]*>\nRecommends', criteria_part)
        flipped += dose.group(1) == "2"
        examples_part = prompt[:prompt.index("</examples>")]
        assert re.findall(r'<reason criterion="(\d)">dose note', examples_part) and all(
            n == dose.group(1)
            for n in re.findall(r'<reason criterion="(\d)">dose note', examples_part))
        assert all(n == harm.group(1)
                   for n in re.findall(r'<reason criterion="(\d)">harm note', examples_part))
    assert 0 < flipped < 6  # both orders were seen


async def test_a_failed_one_shot_call_falls_back_in_the_rubrics_order_without_positions():
    generate = ScriptedGenerate(route=lambda _p: "not json at all")
    grader = PerCriterionOneShotGrader(
        generate, shuffle_criteria=True, seed=2, max_retries=0, on_error="report",
        default_fallback_verdicts={"positive": "UNMET", "negative": "MET"})
    report = await grader.grade("text", [*CRITERIA[:2],
                                         Criterion(name="bad", requirement="Is rude",
                                                   weight=-1)])
    assert [r.requirement for r in report.report] == [
        "Requirement number 0", "Requirement number 1", "Is rude"]
    assert [r.verdict for r in report.report] == [Verdict.UNMET, Verdict.UNMET, Verdict.MET]
    assert [r.prompt_position for r in report.report] == [None] * 3
    assert "criterion 1 (UNMET), criterion 2 (UNMET), criterion 3 (MET)" in report.error
