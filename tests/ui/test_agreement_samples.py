"""AppTest: the Agreement page's stability for a run that asked the judge several times per
criterion — measured from the run's own samples (one run is enough) and said so."""

from __future__ import annotations

import random

from grading.samples import majority
from storage.services import datasets, reviews, rubrics, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import MIXED, judge_report
from tests.ui.pages import unescape
from tests.ui.test_agreement_trust import _open, _table

CRITERIA = MIXED[:1]  # accurate (MET / UNMET)


def _seed(sessions) -> int:
    rng = random.Random(3)
    version = rubrics.create_rubric(sessions, "Sampled", CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, "Sampled answers", responses=[
        {"id": f"s{i}", "query": "q", "text": "word " * (10 + i)} for i in range(12)],
        actor=ADMIN)
    ids = [r.id for r in datasets.list_responses(sessions, dataset.id, limit=None)]
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/judge",
                          settings={"extra": {"samples": 3}}, actor=ADMIN)
    for rid in ids:
        samples = tuple(rng.choice(["MET", "UNMET"]) for _ in range(3))
        report = judge_report([majority(samples)], CRITERIA)
        [item] = report.report
        runs.record_grade(sessions, run.id, rid, report.model_copy(
            update={"report": [item.model_copy(update={"samples": samples})]}))
    runs.start_run(sessions, run.id, worker="seed")
    runs.finish_run(sessions, run.id)
    for rid in ids[:4]:
        reviews.set_human_verdict(sessions, response_id=rid, criterion_id=version.criteria[0].id,
                                  verdict="MET", actor=local_actor("ana"))
    return run.id


def test_one_run_with_samples_shows_its_stability(sessions):
    run_id = _seed(sessions)
    at = _open()
    assert not at.exception, at.exception
    stability = _table(at, "Fleiss' κ")
    assert list(stability["Criterion"]) == ["accurate"]
    assert stability["Flip rate"][0].endswith("(n=12)")
    text = "\n".join(unescape(str(m.value)) for m in [*at.markdown, *at.caption])
    assert f"Samples: run #{run_id} asked the judge 3 times per criterion." in text
    assert "across 3 samples" in text
    assert "Not measured" not in text


