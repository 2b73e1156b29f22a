"""Runs that ask the judge several times per criterion, against the fake provider over real
HTTP: the cache keys each sample by its index (a re-run replays the same answers, more samples
pay only for the new ones, one sample keeps today's keys and prompts), every sample's verdict
is stored, and the criterion's verdict is their majority (a tie: CANNOT_ASSESS)."""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest

from grading.errors import ConfigurationError
from grading.types import Criterion, Verdict
from storage.jobs import run_progress
from storage.services import runs
from tests.actors import ADMIN
from tests.jobs.helpers import (
    CRITERIA,
    MODEL,
    asked_about,
    make_dataset,
    make_rubric,
    make_run,
    run_now,
    sampled_judge,
)


def _stored_samples(sessions, run_id: int) -> dict[tuple[int, int], tuple]:
    return {(g.response_id, c.criterion_id): c.samples
            for g in runs.list_grades(sessions, run_id) for c in g.criteria}


def test_samples_are_cached_by_index_so_reruns_pay_only_for_new_samples(
        sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 4)
    calls = 4 * len(CRITERIA)  # one per response and criterion

    once = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    run_now(sessions, once.id)
    assert fake_provider.requests == calls
    asked_once = [json.dumps(b, sort_keys=True) for b in fake_provider.bodies]

    three = make_run(sessions, version.id, dataset.id, fake_provider.api_base, samples=3)
    run_now(sessions, three.id)
    # Sample 0 is the request the one-sample run made, replayed; samples 1 and 2 are new.
    assert fake_provider.requests == calls * 3
    new_bodies = fake_provider.bodies[calls:]
    assert Counter(asked_about(b) for b in new_bodies) == {
        key: 2 for key in {asked_about(b) for b in fake_provider.bodies[:calls]}}
    # The requests themselves are today's: a sample is the same prompt asked again.
    assert {json.dumps(b, sort_keys=True) for b in new_bodies} == set(asked_once)
    progress = run_progress(sessions, three.id)
    assert (progress.provider_calls, progress.cache_hits) == (calls * 2, calls)

    again = make_run(sessions, version.id, dataset.id, fake_provider.api_base, samples=3)
    run_now(sessions, again.id)
    assert fake_provider.requests == calls * 3  # no new call: the same three answers
    assert _stored_samples(sessions, again.id) == _stored_samples(sessions, three.id)

    five = make_run(sessions, version.id, dataset.id, fake_provider.api_base, samples=5)
    run_now(sessions, five.id)
    assert fake_provider.requests == calls * 5  # only samples 3 and 4 were asked
    stored = _stored_samples(sessions, five.id)
    assert len(stored) == calls and {len(s) for s in stored.values()} == {5}
    assert _stored_samples(sessions, once.id) == dict.fromkeys(stored, None)


def _scripted(answers: dict[str, list[str]]):
    """The k-th request about a criterion is answered ``answers[requirement][k]``."""
    return sampled_judge(lambda key, k: answers[key[1]][k])


def test_every_sample_is_stored_and_the_verdict_is_their_majority(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 2)
    accurate, cites, harmful = (c.requirement for c in CRITERIA)
    fake_provider.default = _scripted({
        accurate: ["MET", "MET", "UNMET", "MET"],
        cites: ["UNMET", "MET", "UNMET", "UNMET"],
        harmful: ["MET", "UNMET", "UNMET", "MET"],  # 2-2: a tie
    })
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, samples=4,
                   temperature=0.7)

    result = run_now(sessions, run.id)

    assert (result.status, result.graded, result.failed) == ("done", 2, 0)
    assert fake_provider.requests == 2 * 3 * 4
    assert {b.get("temperature") for b in fake_provider.bodies} == {0.7}
    for grade in runs.list_grades(sessions, run.id):
        got = {c.position: c for c in grade.criteria}
        assert Counter(got[0].samples) == {"MET": 3, "UNMET": 1}
        assert got[0].verdict is Verdict.MET and "majority of samples: MET 3, UNMET 1" in (
            got[0].reason)
        assert Counter(got[1].samples) == {"UNMET": 3, "MET": 1}
        assert got[1].verdict is Verdict.UNMET
        assert Counter(got[2].samples) == {"MET": 2, "UNMET": 2}
        assert got[2].verdict is Verdict.CANNOT_ASSESS
        assert got[2].reason == "the samples tied (MET 2, UNMET 2): undecided"
        # CANNOT_ASSESS is skipped (the run's strategy): accurate MET, cites UNMET -> 10/10.
        assert grade.score == pytest.approx(10 / 15)
    assert sorted(g.response_id for g in runs.list_grades(sessions, run.id)) == [
        r.id for r in responses]


def test_a_failed_sample_does_not_vote(sessions, fake_provider):
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 1)
    state = {"n": 0}
    lock = threading.Lock()

    def reply(body: dict) -> str:
        with lock:
            state["n"] += 1
            first = state["n"] == 1
        return "not json at all" if first else json.dumps({"verdict": "UNMET", "reason": "no"})

    fake_provider.default = reply
    run = runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader="per_criterion",
        model=MODEL, actor=ADMIN, settings={
            "api_base": fake_provider.api_base, "num_retries": 0,
            "extra": {"samples": 3, "use_cache": False}})
    run_now(sessions, run.id)
    [grade] = runs.list_grades(sessions, run.id)
    [criterion] = grade.criteria
    assert criterion.verdict is Verdict.UNMET
    assert Counter(criterion.samples) == {"UNMET": 2, None: 1}


@pytest.mark.parametrize("grader", ["one_shot", "rubric_as_judge"])
def test_only_the_per_criterion_grader_takes_samples(sessions, grader):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 1)
    with pytest.raises(ConfigurationError, match="only the per-criterion grader"):
        make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1", grader=grader,
                 samples=3)


@pytest.mark.parametrize("bad", [0, -1, 21, 2.5, "3", True])
def test_a_bad_number_of_samples_is_refused_with_its_bounds(sessions, bad):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 1)
    with pytest.raises(Exception, match="samples per criterion must be a whole number from 1 "
                                        "to 20"):
        make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1", samples=bad)


def test_a_run_with_samples_votes_in_a_panel_with_its_majority(sessions, fake_provider):
    """Self-consistency as a panel member: the run's verdict is its samples' majority, and
    that is the vote a panel counts (not any one sample)."""
    from storage.services import panels

    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 1)
    accurate = CRITERIA[0].requirement
    sampled = _scripted({accurate: ["UNMET", "MET", "UNMET"]})
    fake_provider.default = lambda body: (
        sampled(body) if body["model"] == "self" else json.dumps(
            {"verdict": "MET", "reason": "yes"}))
    consistent = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                          model="openai/self", samples=3)
    plain = [make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                      model=f"openai/plain-{i}") for i in range(2)]
    for run in (consistent, *plain):
        run_now(sessions, run.id)

    panel = panels.create_panel(sessions, run_ids=[consistent.id, *(r.id for r in plain)],
                                rule="unanimous", actor=ADMIN)
    [grade] = panels.panel_grades(sessions, panel.id)
    [criterion] = grade.criteria
    assert criterion.member_verdicts == (Verdict.UNMET, Verdict.MET, Verdict.MET)


def test_fewer_samples_after_more_replay_the_first_ones_by_index(sessions, fake_provider):
    """n=5 then n=3: no new call, and each criterion's three samples are the first three of
    the five (the same index, the same answer), in order."""
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 3)
    answers = {c.requirement: ["MET", "UNMET", "UNMET", "MET", "UNMET"] for c in CRITERIA}
    fake_provider.default = _scripted(answers)
    five = make_run(sessions, version.id, dataset.id, fake_provider.api_base, samples=5)
    run_now(sessions, five.id)
    asked = fake_provider.requests
    assert asked == 3 * len(CRITERIA) * 5

    three = make_run(sessions, version.id, dataset.id, fake_provider.api_base, samples=3)
    run_now(sessions, three.id)
    assert fake_provider.requests == asked
    by_five = _stored_samples(sessions, five.id)
    by_three = _stored_samples(sessions, three.id)
    assert by_three == {key: samples[:3] for key, samples in by_five.items()}
    # the samples differ between indexes, so the equality above is about indexes
    assert any(len(set(s)) > 1 for s in by_three.values())


def test_a_likert_criterions_samples_store_their_median(sessions, fake_provider):
    """Ratings 1, 3 and 5 from three samples: the stored option is the median, 3, as a
    panel of three judges rating 1, 3, 5 would decide (not an abstention: no rating
    repeats)."""
    from grading.options import CriterionOption

    likert = tuple(CriterionOption(label=f"rating {v}", value=(v - 1) / 4) for v in range(1, 6))
    clarity = Criterion(name="clarity", requirement="How clear is the answer?", weight=2,
                        options=likert)
    version = make_rubric(sessions, "Likert", [clarity])
    dataset, _ = make_dataset(sessions, 2)
    lock = threading.Lock()
    seen: Counter = Counter()

    def rate(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        response = prompt[prompt.index("answer number "):].split("\n", 1)[0]
        with lock:
            k = seen[response]
            seen[response] += 1
        return json.dumps({"option": f"rating {(1, 3, 5)[k]}", "reason": f"sample {k}"})

    fake_provider.default = rate
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, samples=3)
    assert run_now(sessions, run.id).status == "done"
    grades = runs.list_grades(sessions, run.id)
    assert len(grades) == 2
    for grade in grades:
        [stored] = grade.criteria
        assert sorted(stored.samples) == ["rating 1", "rating 3", "rating 5"]
        assert (stored.verdict, stored.option) == (Verdict.MET, "rating 3")
        assert grade.score == pytest.approx(0.5)
