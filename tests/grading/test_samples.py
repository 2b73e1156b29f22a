"""Asking the judge several times per criterion (grading.samples): the majority rule, the
sample index each call runs under, and one sample staying exactly today's grader."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from grading.autograders import PerCriterionGrader, PerCriterionOneShotGrader
from grading.errors import ConfigurationError
from grading.options import CriterionOption
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


async def test_an_option_tie_abstains_and_keeps_the_labels():
    rated = Criterion(name="tone", requirement="Tone", weight=1, options=[
        CriterionOption(label="good", value=1.0), CriterionOption(label="poor", value=0.0)])
    answers = iter(["good", "poor"])
    generate = ScriptedGenerate(route=lambda _p: json.dumps(
        {"option": next(answers), "reason": "r"}))
    report = await PerCriterionGrader(generate, samples=2).grade("text", [rated])
    [only] = report.report
    assert only.choice is Verdict.CANNOT_ASSESS
    assert sorted(only.samples) == ["good", "poor"]
    assert only.reason.startswith("the samples tied (")


@pytest.mark.parametrize("bad", [0, 21, 1.5, True])
def test_a_bad_number_of_samples_is_a_configuration_error(bad):
    with pytest.raises(ConfigurationError, match="from 1 to 20"):
        PerCriterionGrader(ScriptedGenerate(), samples=bad)


def test_graders_that_ask_once_per_rubric_refuse_samples():
    with pytest.raises(ConfigurationError, match="use PerCriterionGrader"):
        PerCriterionOneShotGrader(ScriptedGenerate(), samples=2)
