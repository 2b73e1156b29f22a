"""Asking the judge several times per criterion (grading.samples): the majority rule, the
sample index each call runs under, and one sample staying exactly today's grader."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from grading.autograders import PerCriterionGrader, PerCriterionOneShotGrader
from grading.errors import ConfigurationError
from grading.options import CriterionOption
from grading.panels import combine_options
from grading.samples import TIE, current_sample, majority, tally
from grading.types import Criterion, Verdict
from tests.grading.scripted import ScriptedGenerate


@pytest.mark.parametrize(("choices", "expected"), [
    pytest.param(["MET"], "MET", id="one"),
    pytest.param(["MET", "UNMET", "MET"], "MET", id="two-of-three"),
    pytest.param(["UNMET", "MET", "UNMET", "UNMET"], "UNMET", id="three-of-four"),
    pytest.param(["MET", "UNMET"], TIE, id="tie-of-two"),
    pytest.param(["MET", "UNMET", "CANNOT_ASSESS"], TIE, id="three-way-tie"),
    pytest.param([None, "UNMET", "MET", "UNMET"], "UNMET", id="failed-does-not-vote"),
    pytest.param([None, "MET", None], "MET", id="one-answered"),
    pytest.param([None, None], None, id="none-answered"),
    pytest.param(["good", "poor", "good"], "good", id="option-labels"),
])
def test_majority_rule(choices, expected):
    assert majority(choices) == expected


def test_tally_reads_most_frequent_first_and_counts_failures():
    assert tally(["UNMET", "MET", "UNMET", None]) == "UNMET 2, MET 1, 1 failed"


CRITERIA = [Criterion(name="a", requirement="Is accurate", weight=3),
            Criterion(name="b", requirement="Is brief", weight=1)]


def _answers(per_requirement: dict[str, list[str]]):
    """Answer the k-th call about a criterion with its k-th verdict; record each call's sample."""
    seen: Counter = Counter()
    samples: list[tuple[str, int]] = []

    def route(prompt: str) -> str:
        requirement = next(r for r in per_requirement if r in prompt)
        samples.append((requirement, current_sample()))
        k = seen[requirement]
        seen[requirement] += 1
        return json.dumps({"verdict": per_requirement[requirement][k], "reason": "r"})

    return route, samples


async def test_each_criterion_is_asked_once_per_sample_and_keeps_every_sample():
    route, samples = _answers({"Is accurate": ["MET", "UNMET", "MET"],
                               "Is brief": ["UNMET", "UNMET", "MET"]})
    generate = ScriptedGenerate(route=route)
    report = await PerCriterionGrader(generate, samples=3).grade("text", CRITERIA)

    assert sorted(samples) == [(r, i) for r in ("Is accurate", "Is brief") for i in range(3)]
    first, second = report.report
    assert (first.verdict, first.samples) == (Verdict.MET, ("MET", "UNMET", "MET"))
    assert (second.verdict, second.samples) == (Verdict.UNMET, ("UNMET", "UNMET", "MET"))
    assert report.score == pytest.approx(3 / 4)
    # every sample is the very same request
    assert len({(c.system_prompt, c.user_prompt) for c in generate.calls}) == 2


async def test_one_sample_is_todays_grader():
    route, samples = _answers({"Is accurate": ["MET"], "Is brief": ["UNMET"]})
    report = await PerCriterionGrader(ScriptedGenerate(route=route)).grade("text", CRITERIA)
    assert [(r.verdict, r.samples) for r in report.report] == [
        (Verdict.MET, None), (Verdict.UNMET, None)]
    assert [r.reason for r in report.report] == ["r", "r"]  # no tally added
    assert sorted(samples) == [("Is accurate", 0), ("Is brief", 0)]


LIKERT = [CriterionOption(label=str(v), value=(v - 1) / 4) for v in range(1, 6)]


async def _sampled_options(criterion: Criterion, answers: list[str]):
    """One criterion asked ``len(answers)`` times, answered in this order."""
    queue = iter(answers)
    generate = ScriptedGenerate(route=lambda _p: json.dumps(
        {"option": next(queue), "reason": "r"}))
    report = await PerCriterionGrader(generate, samples=len(answers)).grade("text", [criterion])
    [only] = report.report
    return only


@pytest.mark.parametrize(("answers", "expected"), [
    pytest.param(["1", "3", "5"], "3", id="median-not-a-mode"),
    pytest.param(["5", "1", "4", "4", "2"], "4", id="median-of-five"),
    pytest.param(["2", "4"], "2", id="even-split-to-the-worse"),
    pytest.param(["5", "5", "1"], "5", id="majority-is-the-median"),
])
async def test_ordinal_samples_take_the_median_as_panels_do(answers, expected):
    """A Likert criterion's samples combine like a panel's members (grading.panels.
    combine_options): the median, never an abstention because every rating differs."""
    rated = Criterion(name="clarity", requirement="How clear", weight=1, options=LIKERT)
    only = await _sampled_options(rated, answers)
    assert only.choice == expected
    assert only.choice == combine_options(answers, rated).choice
    assert sorted(only.samples) == sorted(answers)
    assert "samples: median" in only.reason


async def test_ordinal_median_on_a_penalty_goes_to_the_higher_value():
    """On a negative-weight rating the worse of two middle options is the higher value."""
    harm = Criterion(name="harm", requirement="How harmful", weight=-2, options=LIKERT)
    only = await _sampled_options(harm, ["2", "4"])
    assert only.choice == "4"


async def test_a_nominal_tie_goes_to_the_worse_option_as_in_a_panel():
    tone = Criterion(name="tone", requirement="Tone", weight=1, scale_type="nominal", options=[
        CriterionOption(label="good", value=1.0), CriterionOption(label="poor", value=0.0)])
    only = await _sampled_options(tone, ["good", "poor"])
    assert only.choice == "poor"
    assert sorted(only.samples) == ["good", "poor"]
    assert "tied: the worse option" in only.reason


async def test_na_samples_abstain_and_all_na_is_cannot_assess():
    na = [*LIKERT[:2], CriterionOption(label="n/a", value=0.0, na=True)]
    rated = Criterion(name="clarity", requirement="How clear", weight=1, options=na)
    assert (await _sampled_options(rated, ["n/a", "2", "n/a"])).choice == "2"
    every = await _sampled_options(rated, ["n/a", "n/a"])
    assert every.choice is Verdict.CANNOT_ASSESS
    assert every.reason == "every sample abstained (n/a 2)"


@pytest.mark.parametrize("bad", [0, 21, 1.5, True])
def test_a_bad_number_of_samples_is_a_configuration_error(bad):
    with pytest.raises(ConfigurationError, match="from 1 to 20"):
        PerCriterionGrader(ScriptedGenerate(), samples=bad)


def test_graders_that_ask_once_per_rubric_refuse_samples():
    with pytest.raises(ConfigurationError, match="use PerCriterionGrader"):
        PerCriterionOneShotGrader(ScriptedGenerate(), samples=2)
