"""Calibrated runs of a rubric mixing a binary and a rated criterion, through the real runner
and litellm's HTTP path to the fake provider: each rated criterion's prompt shows the options
people chose on the recorded examples, with the label the judge is asked to answer with."""

from __future__ import annotations

import json
import re

import pytest

from grading.options import CriterionOption as O
from grading.types import Criterion
from storage.services import calibration, reviews, runs
from tests.actors import ADMIN
from tests.fake_provider import Reply, judge_reply
from tests.jobs.helpers import MODEL, make_dataset, make_rubric, run_now

TEXT = re.compile(r"answer number (\d+)\n")
LIKERT = (O(label="Poor", value=0.0), O(label="Fair", value=0.5), O(label="Good", value=1.0))
CRITERIA = [Criterion(name="accurate", requirement="States the dose correctly", weight=10),
            Criterion(name="clarity", requirement="How clear is the answer?", weight=5,
                      options=LIKERT)]
LABELS = ("Poor", "Fair", "Good")


def _answer(i: int, c: int) -> str:
    return ("MET" if i % 2 else "UNMET") if c == 0 else LABELS[i % 3]


def _mixed_judge(body: dict) -> Reply:
    """A valid answer for the one-shot mixed schema (a verdict, then an option)."""
    if body.get("response_format", {}).get("json_schema", {}).get("name") != "criteria_verdicts":
        return judge_reply(body)
    return Reply(json.dumps({"criteria": [
        {"number": 1, "reason": "ok", "verdict": "MET"},
        {"number": 2, "reason": "ok", "option": "Good"}]}))


def _review(sessions, version, responses):
    for i, response in enumerate(responses):
        for c, criterion in enumerate(version.criteria):
            reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response.id,
                                      criterion_id=criterion.id, verdict=_answer(i, c),
                                      note=f"note {i}/{c}")


@pytest.mark.parametrize("grader", ["per_criterion", "one_shot"])
def test_rated_prompts_show_the_options_people_chose_on_the_recorded_examples(
        sessions, fake_provider, grader):
    version = make_rubric(sessions, criteria=CRITERIA)
    dataset, responses = make_dataset(sessions, 8)
    _review(sessions, version, responses[:6])
    fake_provider.default = _mixed_judge
    run = runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader=grader,
        model=MODEL, actor=ADMIN,
        settings={"api_base": fake_provider.api_base, "calibration": {"k": 3, "seed": 2}})
    result = run_now(sessions, run.id)
    assert (result.status, result.graded, result.failed) == ("done", 8, 0)
    assert len(fake_provider.bodies) == 8 * (2 if grader == "per_criterion" else 1)
    loaded = calibration.load_examples(sessions, run.id)
    assert sorted(e.option for e in loaded.sets[1].examples) == sorted(LABELS)
    number = {r.id: i for i, r in enumerate(responses)}
    rated_prompts = 0
    for body in fake_provider.bodies:
        prompt = body["messages"][-1]["content"]
        examples, graded = prompt.split("The response to grade:")
        [graded_number] = [int(n) for n in TEXT.findall(graded)]
        response = responses[graded_number]
        expected = loaded.for_response(response.id, response.output)[1]
        if grader == "per_criterion" and "<options>" not in graded:
            assert "<human_option" not in examples  # the binary criterion's own call
            continue
        rated_prompts += 1
        attribute = "" if grader == "per_criterion" else ' criterion="2"'
        shown = re.findall(rf"answer number (\d+)\n</response>\n(?:<human_verdict[^\n]*\n"
                           rf"<reason[^\n]*\n)?<human_option{attribute}>(\w+)</human_option>",
                           examples)
        assert sorted((int(n), label) for n, label in shown) == sorted(
            (number[e.response_key], e.option) for e in expected)
        for n, label in shown:
            assert label == _answer(int(n), 1)  # the option people chose, as they spelt it
        assert graded_number not in {int(n) for n, _ in shown}
        assert "1. Poor\n2. Fair\n3. Good" in graded  # the words the examples use
    assert rated_prompts == 8
