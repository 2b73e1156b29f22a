"""Runs of rubrics mixing binary, multi-choice and required criteria, against the fake
provider over real HTTP: the chosen option (and the shuffled order the judge saw) is stored,
a response's reference answer reaches the judge, and every score is the one aggregation
function's, as ``grading.Rubric.compute_score`` gives it."""

from __future__ import annotations

import json
import re

import pytest

from grading.options import CriterionOption as O
from grading.rubric import Rubric
from grading.types import Criterion, Verdict
from storage.services import datasets, reviews, runs
from tests.actors import ADMIN
from tests.fake_provider import Reply, judge_reply
from tests.jobs.helpers import make_rubric, make_run, run_now

LIKERT = tuple(O(label=label, value=v) for label, v in
               [("Poor", 0.0), ("Fair", 0.25), ("Good", 0.5), ("Very good", 0.75),
                ("Excellent", 1.0)])
CRITERIA = [
    Criterion(name="accurate", requirement="States the dose correctly", weight=10,
              required=True),
    Criterion(name="clarity", requirement="How clear is the answer?", weight=5,
              options=LIKERT),
    Criterion(name="tone", requirement="Which tone does it take?", weight=2,
              scale_type="nominal",
              options=(O(label="formal", value=1.0), O(label="casual", value=0.5),
                       O(label="no text", value=0.0, na=True))),
]
REFERENCE = "Take 5 mg twice a day."
# What the scripted judge picks for each multi-choice criterion, by its requirement.
PICKS = {"How clear is the answer?": "Very good", "Which tone does it take?": "no text"}


def picky_judge(body: dict) -> Reply:
    """Chooses the option PICKS names (whatever order the options were shown in)."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    labels = ((schema.get("properties") or {}).get("option") or {}).get("enum")
    if not labels:
        return judge_reply(body)
    prompt = body["messages"][-1]["content"]
    wanted = next(label for requirement, label in PICKS.items() if requirement in prompt)
    chosen = next(label for label in labels if label.startswith(wanted))
    return Reply(json.dumps({"reason": "as scripted", "option": chosen}))


def shown_order(prompt: str, criterion: Criterion) -> tuple[int, ...]:
    """The original option indices in the order the prompt listed them."""
    block = prompt[prompt.index("<options>"):prompt.index("</options>")]
    shown = re.findall(r"^\d+\. (.+)$", block, flags=re.M)
    labels = [o.label for o in criterion.options]
    return tuple(next(i for i, label in enumerate(labels) if line.startswith(label))
                 for line in shown)


def _dataset(sessions):
    rows = [{"id": "with", "query": "How much?", "text": "answer number 0: 5 mg twice daily",
             "reference": REFERENCE},
            {"id": "without", "query": "How much?", "text": "answer number 1: some"}]
    dataset = datasets.create_dataset(sessions, "Answers", responses=rows, actor=ADMIN)
    return dataset, datasets.list_responses(sessions, dataset.id, limit=None)


def test_a_mixed_rubric_run_stores_options_and_scores_as_compute_score(sessions,
                                                                       fake_provider):
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset, responses = _dataset(sessions)
    assert [r.reference for r in responses] == [REFERENCE, None]
    fake_provider.default = picky_judge
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                   shuffle_options=True, shuffle_seed=7)

    result = run_now(sessions, run.id)

    assert (result.status, result.graded, result.failed) == ("done", 2, 0)
    grades = runs.list_grades(sessions, run.id)
    for grade in grades:
        assert [(c.verdict, c.option) for c in grade.criteria] == [
            (Verdict.MET, None), (Verdict.MET, "Very good"),
            (Verdict.CANNOT_ASSESS, "no text")]
        expected = Rubric(CRITERIA).compute_score(["MET", "Very good", "no text"])
        assert grade.score == pytest.approx(expected) == pytest.approx((10 + 0.75 * 5) / 15)
        assert grade.cannot_assess_count == 1
        # the effective score (no human verdicts yet) is the judge's
        assert reviews.effective_grade(sessions, grade.id).score == pytest.approx(expected)

    # the order the judge saw each rating's options in is stored with the verdict
    by_text = {r.output: r.id for r in responses}
    orders = {}
    for body in fake_provider.bodies:
        prompt = body["messages"][-1]["content"]
        if "<options>" not in prompt or "How clear" not in prompt:
            continue
        response_id = next(rid for text, rid in by_text.items() if text in prompt)
        orders[response_id] = shown_order(prompt, CRITERIA[1])
    stored = {g.response_id: g.criteria[1].shuffle_order for g in grades}
    assert set(orders) == set(stored) == {r.id for r in responses}
    for response_id, order in orders.items():
        identity = tuple(range(len(LIKERT)))
        assert stored[response_id] == (None if order == identity else order)
    assert any(order is not None for order in stored.values())  # seed 7 does shuffle

    # the reference answer reached the judge for the response that has one, only there
    for body in fake_provider.bodies:
        prompt = body["messages"][-1]["content"]
        if "answer number 0" in prompt:
            assert "<reference_answer>" in prompt and REFERENCE in prompt
        else:
            assert "reference_answer" not in prompt and REFERENCE not in prompt


def test_a_closed_gate_scores_zero_in_storage_as_in_the_library(sessions, fake_provider):
    version = make_rubric(sessions, "Gated", CRITERIA)
    dataset, _ = _dataset(sessions)

    def unmet_accuracy(body: dict) -> Reply:
        prompt = body["messages"][-1]["content"]
        if "States the dose correctly" in prompt:
            return Reply(json.dumps({"verdict": "UNMET", "reason": "wrong dose"}))
        return picky_judge(body)

    fake_provider.default = unmet_accuracy
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    assert run_now(sessions, run.id).status == "done"
    for grade in runs.list_grades(sessions, run.id):
        assert [c.choice for c in grade.criteria] == [Verdict.UNMET, "Very good", "no text"]
        assert grade.score == Rubric(CRITERIA).compute_score(
            ["UNMET", "Very good", "no text"]) == 0.0
        assert grade.raw_score == pytest.approx(0.75 * 5)


def one_shot_judge(body: dict) -> Reply:
    """Answers every criterion of a one-shot request: MET, or the last option listed."""
    schema = body["response_format"]["json_schema"]["schema"]
    answers = []
    for variant in schema["properties"]["criteria"]["items"]["anyOf"]:
        numbers = variant["properties"]["number"]["enum"]
        labels = (variant["properties"].get("option") or {}).get("enum")
        answers += [{"number": n, "reason": "ok", **({"option": labels[-1]} if labels
                                                      else {"verdict": "MET"})}
                    for n in numbers]
    return Reply(json.dumps({"criteria": answers}))


def test_the_one_shot_grader_stores_options_too(sessions, fake_provider):
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset, _ = _dataset(sessions)
    fake_provider.default = one_shot_judge
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, grader="one_shot")
    result = run_now(sessions, run.id)
    assert (result.status, result.failed) == ("done", 0), result
    assert fake_provider.requests == 2  # one call per response
    for grade in runs.list_grades(sessions, run.id):
        assert [c.choice for c in grade.criteria] == [Verdict.MET, "Excellent", "no text"]
        assert grade.score == pytest.approx(Rubric(CRITERIA).compute_score(
            ["MET", "Excellent", "no text"])) == 1.0


def test_a_wording_trial_shows_the_judge_the_same_reference_as_the_run(sessions,
                                                                       fake_provider):
    import asyncio

    from storage.services import trials

    version = make_rubric(sessions, "Refs", [CRITERIA[0]])
    dataset, responses = _dataset(sessions)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                   model="openai/gpt-4o-mini")
    assert run_now(sessions, run.id).status == "done"
    [accurate] = version.criteria
    for response in responses:
        reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response.id,
                                  criterion_id=accurate.id, verdict="MET")
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement="States the dose and how often")
    before = fake_provider.requests
    asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=5.0))
    asked = [b["messages"][-1]["content"] for b in fake_provider.bodies[before:]]
    assert len(asked) == 2
    [with_reference] = [p for p in asked if "answer number 0" in p]
    [without] = [p for p in asked if "answer number 1" in p]
    assert "<reference_answer>" in with_reference and REFERENCE in with_reference
    assert "reference_answer" not in without


@pytest.mark.parametrize("grader", ["per_criterion", "one_shot", "rubric_as_judge"])
def test_the_estimate_counts_the_prompts_the_judge_is_sent(sessions, fake_provider, grader):
    """Rating criteria have prompts and schemas of their own and the reference answer adds a
    block: the estimate's prompt tokens are those of the messages the judge really got (the
    same four characters a token), not those of binary prompts without the reference."""
    from storage.jobs import estimate_run
    from storage.jobs.estimate import approx_tokens

    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset, _ = _dataset(sessions)
    sent: list[int] = []

    def counting_judge(body: dict) -> Reply:
        schema = json.dumps((body.get("response_format") or {}).get("json_schema", {}))
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        sent.append(approx_tokens(system) + approx_tokens(user) + approx_tokens(schema))
        if '"criteria"' in schema:  # the one-shot list: every criterion, one answer
            return Reply(json.dumps({"criteria": [
                {"number": 1, "reason": "as scripted", "verdict": "MET"},
                {"number": 2, "reason": "as scripted", "option": "Very good"},
                {"number": 3, "reason": "as scripted", "option": "formal"}]}))
        return picky_judge(body)

    fake_provider.default = counting_judge
    estimate = estimate_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader=grader, model="openai/fake-judge")
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, grader=grader)
    assert run_now(sessions, run.id).status == "done"
    assert estimate.calls == len(sent)
    assert estimate.prompt_tokens == pytest.approx(sum(sent), rel=0.03)
