"""The runner against the fake provider over real HTTP: grades stored as they complete,
per-grade failures, fatal configuration errors, the cache."""

from __future__ import annotations

import pytest

from storage.jobs import run_progress
from storage.services import runs
from tests.fake_provider import judge_reply
from tests.jobs.helpers import make_dataset, make_rubric, make_run, run_now


def test_run_grades_every_response_and_ends_done(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 5)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base)

    result = run_now(sessions, run.id)

    assert (result.status, result.graded, result.failed) == ("done", 5, 0)
    assert fake_provider.requests == 15  # 5 responses x 3 criteria
    grades = runs.list_grades(sessions, run.id)
    assert [g.response_id for g in grades] == [r.id for r in responses]
    # The fake judge says MET to everything, the negative criterion included: (10+5-8)/15.
    assert [g.score for g in grades] == [pytest.approx(7 / 15)] * 5
    progress = run_progress(sessions, run.id)
    assert (progress.status, progress.done, progress.failed, progress.pending) == (
        "done", 5, 0, 0)
    assert progress.provider_calls == 15 and progress.cache_hits == 0
    assert progress.prompt_tokens == 15 * 11


def test_failed_grade_is_stored_and_the_run_goes_on(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 3)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, use_cache=False)
    # Response 1 only ever gets unusable answers: its parse retries run out.
    fake_provider.default = lambda body: (
        "not json" if "answer number 1\n" in body["messages"][-1]["content"]
        else judge_reply(body))

    result = run_now(sessions, run.id)

    assert (result.status, result.graded, result.failed) == ("done", 3, 1)
    failed = [g for g in runs.list_grades(sessions, run.id) if g.score is None]
    assert len(failed) == 1 and "could not be judged" in failed[0].error
    assert runs.get_run(sessions, run.id).failed_count == 1
