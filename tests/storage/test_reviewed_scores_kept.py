"""``results.reviewed_effective_scores`` (the page's cached reviewed scores) reads the kept
``effective_run_scores`` of the responses whose every decision the viewer sees, and
aggregates only the others: the same figures as aggregating every reviewed response, for
every viewer, on SQLite and PostgreSQL."""

from __future__ import annotations

from storage.services import blindness, datasets, results, reviews, runs
from storage.services.results_python import _effective_overlay
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import MIXED, judge_report
from tests.storage.helpers import make_rubric, make_run

SIGHTS = (blindness.EVERYTHING, blindness.as_reviewer("ana"), blindness.as_reviewer("bo"),
          blindness.as_reviewer("cy"), blindness.NOBODY)


def test_reviewed_scores_aggregate_only_what_the_viewer_may_not_see(sessions, monkeypatch):
    version = make_rubric(sessions, "Mixed", MIXED)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(6)], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    run_ids = [make_run(sessions, version.id, dataset.id).id for _ in range(2)]
    criteria = version.to_criteria()
    for n, run_id in enumerate(run_ids):
        for r in responses[n:]:  # the second run never graded the first response
            runs.record_grades(sessions, run_id, [runs.NewGrade(r.id, judge_report(
                ["MET", "Good", "no text"] if (r.id + n) % 2 else ["UNMET", "Poor", "formal"],
                criteria), 0.1)])
    first, clarity, _tone = version.criteria
    both, anas, bos = responses[0].id, responses[1].id, responses[2].id
    for who, rid in (("ana", both), ("bo", both), ("ana", anas), ("bo", bos)):
        reviews.set_human_verdict(sessions, actor=local_actor(who), response_id=rid,
                                  criterion_id=first.id, verdict="UNMET")
    reviews.set_human_verdict(sessions, actor=local_actor("bo"), response_id=both,
                              criterion_id=clarity.id, verdict="Good")
    where = {"dataset_id": dataset.id, "rubric_version_id": version.id, "run_ids": run_ids}
    aggregated: dict = {}

    def spy(sessions, run_ids, reviewed_ids, sight=blindness.EVERYTHING):
        aggregated[sight] = list(reviewed_ids)
        return _effective_overlay(sessions, run_ids, reviewed_ids, sight)

    monkeypatch.setattr(results, "_effective_overlay", spy)
    for sight in SIGHTS:
        found = results.reviewed_effective_scores(sessions, **where, sight=sight)
        assert found == _effective_overlay(sessions, run_ids, [both, anas, bos], sight)
    assert aggregated[blindness.EVERYTHING] == []
    assert aggregated[blindness.as_reviewer("ana")] == [both, bos]  # bo's decisions
    assert aggregated[blindness.as_reviewer("bo")] == [anas]  # bo answered both on both
    assert aggregated[blindness.NOBODY] == [both, anas, bos]
