"""Wording trials on a multi-choice criterion, through the real provider path: the judge's
options against people's, exact match and (on an ordinal scale) quadratic-weighted kappa as
scikit-learn computes it, flips by label, adoption with the options carried, and what happens
when people change an option after the trial ran."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from sklearn.metrics import cohen_kappa_score

from grading.options import CriterionOption as O
from grading.types import Criterion
from storage.services import calibration, datasets, reviews, rubrics, runs, trials
from storage.services.reviewers import local_actor
from tests.fake_provider import Reply, judge_reply
from tests.jobs.helpers import make_run, run_now

ADMIN = local_actor("Ada")
PAT = local_actor("Pat")
LABELS = ("Poor", "Fair", "Good", "Very good", "Excellent")
LIKERT = tuple(O(label=label, value=i / 4) for i, label in enumerate(LABELS))
OLD, NEW = "How clear is the answer?", "How clear is the answer to a patient with no training?"
# Per response: what people chose, what the judge chooses under the old and the new wording.
PEOPLE = ["Poor", "Fair", "Good", "Very good", "Excellent", "Good", "Fair", "Poor"]
UNDER_OLD = ["Good", "Good", "Good", "Good", "Good", "Good", "Good", "Good"]
UNDER_NEW = ["Poor", "Good", "Good", "Excellent", "Excellent", "Good", "Poor", "Fair"]
TEXT = re.compile(r"answer (\d+) text")


def wording_sensitive_rater(body):
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    if not ((schema.get("properties") or {}).get("option") or {}).get("enum"):
        return judge_reply(body)
    prompt = body["messages"][-1]["content"]
    graded = prompt.split("The response to grade:")[-1]
    [number] = [int(n) for n in TEXT.findall(graded)]
    picks = UNDER_NEW if "patient with no training" in prompt else UNDER_OLD
    return Reply(json.dumps({"reason": f"reading {number}", "option": picks[number]}))


@pytest.fixture
def rated(sessions, fake_provider):
    """Eight responses graded under the old wording; people rated 'clarity' on all eight."""
    fake_provider.default = wording_sensitive_rater
    version = rubrics.create_rubric(sessions, "Dosing", [
        Criterion(name="accurate", requirement="States the dose", weight=10),
        Criterion(name="clarity", requirement=OLD, weight=5, options=LIKERT),
    ], actor=ADMIN)
    rows = [{"id": f"r{i}", "text": f"answer {i} text"} for i in range(len(PEOPLE))]
    dataset = datasets.create_dataset(sessions, "Answers", responses=rows, actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                   model="openai/gpt-4o-mini")
    assert run_now(sessions, run.id).status == "done"
    clarity = version.criteria[1]
    for response, label in zip(responses, PEOPLE, strict=True):
        reviews.set_human_verdict(sessions, response_id=response.id, criterion_id=clarity.id,
                                  verdict=label, actor=PAT, note=f"rated {label}")
    return version, dataset, responses, run, clarity


def _sklearn(people, judged):
    return cohen_kappa_score([LABELS.index(x) for x in people],
                             [LABELS.index(x) for x in judged], weights="quadratic")


def test_an_ordinal_trial_reports_exact_match_and_weighted_kappa_as_scikit_learn(
        sessions, fake_provider, rated):
    _version, _dataset, _responses, run, clarity = rated
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=clarity.id,
                             requirement=NEW)
    assert [c.human for c in plan.cases] == PEOPLE and [c.before for c in plan.cases] == \
        UNDER_OLD
    assert plan.new_criterion.options == LIKERT and plan.new_criterion.requirement == NEW
    sent = len(fake_provider.bodies)
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    for body in fake_provider.bodies[sent:]:  # the options are asked for, with the new words
        assert body["response_format"]["json_schema"]["schema"]["properties"]["option"][
            "enum"] == list(LABELS)
        assert NEW in body["messages"][-1]["content"]
    before, after = result.before.agreement, result.after.agreement
    assert before.metric == "quadratic-weighted kappa" and before.pairs_used == 8
    agree = sum(p == n for p, n in zip(PEOPLE, UNDER_NEW, strict=True))
    assert after.percent_agreement == pytest.approx(100 * agree / 8)
    assert before.percent_agreement == pytest.approx(100 * 2 / 8)
    assert after.cohens_kappa == pytest.approx(_sklearn(PEOPLE, UNDER_NEW))
    # the old judge always said "Good": no disagreement by chance either, kappa 0
    assert before.cohens_kappa == pytest.approx(_sklearn(PEOPLE, UNDER_OLD))
    assert result.difference_interval is not None
    flips = {f.external_id: (f.human, f.before, f.after) for f in result.flips}
    assert flips == {f"r{i}": (PEOPLE[i], UNDER_OLD[i], UNDER_NEW[i])
                     for i in range(8) if UNDER_OLD[i] != UNDER_NEW[i]}


def test_a_changed_option_after_the_trial_is_read_at_the_next_look(sessions, fake_provider,
                                                                   rated):
    """Second tab: people change an option (and make another N/A-like abstention) after
    the trial ran. The figures are recomputed against the decisions in force now."""
    _version, _dataset, responses, run, clarity = rated
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=clarity.id,
                             requirement=NEW)
    trial_id = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN,
                                            max_cost=None)).trial_id
    reviews.set_human_verdict(sessions, response_id=responses[1].id, criterion_id=clarity.id,
                              verdict="Good", actor=PAT)  # now agrees with the new wording
    reviews.set_human_verdict(sessions, response_id=responses[7].id, criterion_id=clarity.id,
                              verdict="CANNOT_ASSESS", actor=PAT)  # drops out
    again = trials.get_trial(sessions, trial_id)
    people = ["Poor", "Good", *PEOPLE[2:7]]
    assert again.judged == 7 and [c.human for c in again.plan.cases] == people
    assert again.after.agreement.cohens_kappa == pytest.approx(_sklearn(people, UNDER_NEW[:7]))
    assert again.after.agreement.percent_agreement == pytest.approx(100 * 5 / 7)


def test_adopting_a_rated_wording_keeps_the_options_and_carries_peoples_options(
        sessions, fake_provider, rated):
    version, _dataset, responses, run, clarity = rated
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=clarity.id,
                             requirement=NEW)
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    adopted = trials.adopt_wording(sessions, result.trial_id, actor=ADMIN,
                                   carry_human_verdicts=True)
    new = adopted.criteria[1]
    assert (new.requirement, new.options, new.scale_type) == (NEW, LIKERT, "ordinal")
    for response, label in zip(responses, PEOPLE, strict=True):
        carried = reviews.current_verdicts(sessions, response.id, adopted.id)[new.id]
        assert carried.option == label and "carried from v1" in carried.note
    assert version.number + 1 == adopted.number


def test_a_calibrated_rating_is_tried_with_the_options_its_examples_showed(
        sessions, fake_provider, rated):
    version, dataset, responses, _run, clarity = rated
    for i, response in enumerate(responses):  # calibration needs examples on every criterion
        reviews.set_human_verdict(sessions, response_id=response.id,
                                  criterion_id=version.criteria[0].id,
                                  verdict="MET" if i % 2 else "UNMET", actor=PAT)
    run = runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader="per_criterion",
        model="openai/gpt-4o-mini", actor=ADMIN,
        settings={"api_base": fake_provider.api_base, "calibration": {"k": 3, "seed": 1}})
    assert run_now(sessions, run.id).status == "done"
    shown = [e for e in calibration.list_run_examples(sessions, run.id)
             if e.criterion_id == clarity.id and e.role == "example"]
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=clarity.id,
                             requirement=NEW)
    assert not {c.response.id for c in plan.cases} & {e.response_id for e in shown}
    sent = len(fake_provider.bodies)
    asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    for body in fake_provider.bodies[sent:]:
        examples = body["messages"][-1]["content"].split("The response to grade:")[0]
        assert sorted(re.findall(r"<human_option>([\w ]+)</human_option>", examples)) == \
            sorted(e.option for e in shown)
