"""A small world for the trust report: two runs of one judge (samples), one other judge,
a multi-choice criterion shown shuffled, a random review sample and hard cases outside it.

Seeded through the storage services (the runner's stats row aside). Shared by the storage,
command-line and AppTest tests of the trust report.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from grading.types import TokenUsage
from storage import models as m
from storage.services import datasets, review_sets, reviews, rubrics, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import LIKERT, MIXED, judge_report

CRITERIA = MIXED[:2]  # accurate (MET / UNMET), clarity (five ordered options)
RESPONSES = 60
SAMPLE = 20
HARD_CASES = 5


@dataclass(frozen=True)
class TrustWorld:
    version_id: int
    dataset_id: int
    criterion_ids: list[int]
    response_ids: list[int]
    lengths: dict[int, int]
    runs: dict[str, int]  # "a1", "a2" (same judge), "b"
    sample: list[int]  # the review set's random sample
    hard: list[int]  # reviewed outside the sample
    human: dict[int, tuple[str, str]]  # response -> (accurate, clarity)
    judged: dict[str, dict[int, tuple[str, str]]]  # run -> response -> choices
    shown: dict[str, dict[int, list[int]]]  # run -> response -> shuffle order of clarity
    second: dict[int, tuple[str, str]]  # the second reviewer's choices (second_reviewer)


def _choices(rng: random.Random, length: int, truth: tuple[str, str], flip: float,
             long_bias: float) -> tuple[str, str]:
    accurate = truth[0]
    if rng.random() < flip:
        accurate = "UNMET" if accurate == "MET" else "MET"
    if rng.random() < long_bias * length / 3000:
        accurate = "MET"
    clarity = truth[1] if rng.random() > flip else rng.choice([o.label for o in LIKERT])
    return accurate, clarity


def seed(sessions, *, rubric_name: str = "Trust", dataset_name: str = "Trust answers",
         b_twice: bool = False, second_reviewer: bool = False) -> TrustWorld:
    """``b_twice``: a second run of judge b ("b2"), made after the others (their draws
    stay the same). ``second_reviewer``: "bo" also reviews the random sample, agreeing with
    ana except on accurate for every fifth sampled response (``world.second``)."""
    rng = random.Random(11)
    version = rubrics.create_rubric(sessions, rubric_name, CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, dataset_name, responses=[
        {"id": f"t{i}", "query": f"question {i}", "text": "word " * rng.randint(20, 600)}
        for i in range(RESPONSES)], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    ids = [r.id for r in responses]
    lengths = {r.id: len(r.output) for r in responses}
    truth = {rid: (rng.choice(["MET", "UNMET"]), rng.choice([o.label for o in LIKERT]))
             for rid in ids}
    made = {
        "a1": runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                              grader="per_criterion", model="openai/judge-a", actor=ADMIN),
        "a2": runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                              grader="per_criterion", model="openai/judge-a", actor=ADMIN),
        "b": runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                             grader="per_criterion", model="openai/judge-b", actor=ADMIN),
    }
    if b_twice:
        made["b2"] = runs.create_run(sessions, rubric_version_id=version.id,
                                     dataset_id=dataset.id, grader="per_criterion",
                                     model="openai/judge-b", actor=ADMIN)
    judged: dict[str, dict[int, tuple[str, str]]] = {k: {} for k in made}
    shown: dict[str, dict[int, list[int]]] = {k: {} for k in made}
    for key, run in made.items():
        for rid in ids:
            choices = _choices(rng, lengths[rid], truth[rid], 0.15 if key[0] != "b" else 0.3,
                               0.6 if key[0] != "b" else 0.0)
            order = list(range(len(LIKERT)))
            rng.shuffle(order)
            if key == "a1" and rng.random() < 0.3:  # a1 is drawn to the first option shown
                choices = (choices[0], LIKERT[order[0]].label)
            report = judge_report(list(choices), CRITERIA)
            items = list(report.report)
            items[1] = items[1].model_copy(update={"shuffle_order": tuple(order)})
            report = report.model_copy(update={
                "report": items, "completion_cost": 0.002,
                "token_usage": TokenUsage(prompt_tokens=100, completion_tokens=20,
                                          total_tokens=120)})
            runs.record_grade(sessions, run.id, rid, report)
            judged[key][rid] = choices
            shown[key][rid] = order
        runs.start_run(sessions, run.id, worker="seed")
        runs.finish_run(sessions, run.id)
    review_sets.update_settings(sessions, actor=ADMIN, dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=1,
                                sample_size=SAMPLE)
    sample = review_sets.sample_ids(dataset.id, version.id, ids, SAMPLE)
    hard = sorted(set(ids) - set(sample))[:HARD_CASES]
    ana = local_actor("ana")
    for rid in [*sample, *hard]:
        for criterion, choice in zip(version.criteria, truth[rid], strict=True):
            reviews.set_human_verdict(sessions, response_id=rid, criterion_id=criterion.id,
                                      verdict=choice, actor=ana)
    second: dict[int, tuple[str, str]] = {}
    if second_reviewer:
        bo = local_actor("bo")
        for i, rid in enumerate(sample):
            accurate, clarity = truth[rid]
            if i % 5 == 0:
                accurate = "UNMET" if accurate == "MET" else "MET"
            second[rid] = (accurate, clarity)
            for criterion, choice in zip(version.criteria, second[rid], strict=True):
                reviews.set_human_verdict(sessions, response_id=rid,
                                          criterion_id=criterion.id, verdict=choice, actor=bo)
    return TrustWorld(second=second,
        version_id=version.id, dataset_id=dataset.id,
        criterion_ids=[c.id for c in version.criteria], response_ids=ids, lengths=lengths,
        runs={k: r.id for k, r in made.items()}, sample=sample, hard=hard,
        human={rid: truth[rid] for rid in [*sample, *hard]}, judged=judged, shown=shown)


def mark_replayed(sessions, run_id: int) -> None:
    """What the job runner records for a run whose every answer came from the cache."""
    with sessions.begin() as session:
        session.add(m.RunJobStatsRow(run_id=run_id, provider_calls=0, cache_hits=RESPONSES,
                                     rate_limited=0))


def copy_run(sessions, world: TrustWorld, key: str, model: str) -> int:
    """A run of another judge that gave run ``key``'s choices, shown the same option orders
    (two judges with one shuffle seed, agreeing): a new run's id."""
    run = runs.create_run(sessions, rubric_version_id=world.version_id,
                          dataset_id=world.dataset_id, grader="per_criterion", model=model,
                          actor=ADMIN)
    for rid in world.response_ids:
        report = judge_report(list(world.judged[key][rid]), CRITERIA)
        items = list(report.report)
        items[1] = items[1].model_copy(update={"shuffle_order": tuple(world.shown[key][rid])})
        runs.record_grade(sessions, run.id, rid, report.model_copy(update={"report": items}))
    runs.start_run(sessions, run.id, worker="seed")
    runs.finish_run(sessions, run.id)
    return run.id
