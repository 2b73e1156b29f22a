"""The runner against the fake provider over real HTTP: grades stored as they complete,
per-grade failures, fatal configuration errors, the cache."""

from __future__ import annotations

import pytest

from grading.types import EvaluationReport, TokenUsage
from storage.jobs import run_progress
from storage.jobs.limiter import limiter_for
from storage.services import runs
from tests.actors import ADMIN
from tests.fake_provider import Reply, judge_reply
from tests.jobs.helpers import CRITERIA, MODEL, make_dataset, make_rubric, make_run, run_now


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


def test_missing_credentials_fail_the_run_and_name_the_variable(sessions, monkeypatch):
    monkeypatch.delenv("RUBRIC_WORKBENCH_API_KEY")
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="anthropic/claude-judge", actor=ADMIN)

    result = run_now(sessions, run.id)

    assert result.status == "failed" and "ANTHROPIC_API_KEY" in result.error
    stored = runs.get_run(sessions, run.id)
    assert stored.status == "failed" and "ANTHROPIC_API_KEY" in stored.error
    assert runs.list_grades(sessions, run.id) == []


def test_a_rejected_key_fails_the_run_without_storing_failed_grades(sessions, fake_provider):
    fake_provider.required_api_key = "the-right-key"
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 4)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base)

    result = run_now(sessions, run.id)

    assert result.status == "failed"
    assert "RUBRIC_WORKBENCH_API_KEY" in result.error and "401" in result.error
    assert runs.list_grades(sessions, run.id) == []  # nothing graded: all stay pending
    assert len(runs.pending_response_ids(sessions, run.id)) == 4
    # Fixed key, requeued: the run completes.
    fake_provider.required_api_key = "test-key"
    runs.requeue_run(sessions, run.id, actor=ADMIN)
    assert run_now(sessions, run.id).status == "done"
    assert len(runs.list_grades(sessions, run.id)) == 4


def test_an_identical_rerun_is_answered_from_the_cache(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 4)
    first = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    run_now(sessions, first.id)
    assert fake_provider.requests == 12

    second = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    result = run_now(sessions, second.id)

    assert fake_provider.requests == 12  # no new provider call
    assert (result.status, result.cache_hits, result.provider_calls) == ("done", 12, 0)
    progress = run_progress(sessions, second.id)
    assert (progress.cache_hits, progress.provider_calls) == (12, 0)
    assert (progress.cost, progress.total_tokens, progress.unknown_cost_count) == (0.0, 0, 0)
    assert progress.done == 4
    first_scores = [g.score for g in runs.list_grades(sessions, first.id)]
    assert [g.score for g in runs.list_grades(sessions, second.id)] == first_scores
    assert all(g.cost == 0.0 and g.total_tokens == 0
               for g in runs.list_grades(sessions, second.id))


def test_the_cache_can_be_switched_off_per_run(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    run_now(sessions, make_run(sessions, version.id, dataset.id, fake_provider.api_base).id)
    off = make_run(sessions, version.id, dataset.id, fake_provider.api_base, use_cache=False)
    result = run_now(sessions, off.id)
    assert fake_provider.requests == 12 and result.cache_hits == 0


def test_a_different_model_or_sampling_is_not_a_cache_hit(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    run_now(sessions, make_run(sessions, version.id, dataset.id, fake_provider.api_base).id)
    run_now(sessions, make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                               model="openai/other-judge").id)
    run_now(sessions, make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                               temperature=0.7).id)
    assert fake_provider.requests == 18


def test_an_unusable_cached_answer_is_asked_again(sessions, fake_provider):
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 1)
    fake_provider.enqueue("not json")  # the first answer is unusable, the retry is fine
    run_now(sessions, make_run(sessions, version.id, dataset.id, fake_provider.api_base).id)
    assert fake_provider.requests == 2
    # The cache now holds the good answer (the retry replaced the bad one).
    rerun = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    result = run_now(sessions, rerun.id)
    assert fake_provider.requests == 2 and result.cache_hits == 1
    assert runs.list_grades(sessions, rerun.id)[0].score is not None


def test_rate_limits_back_off_adaptively_and_every_grade_succeeds(sessions, fake_provider):
    fake_provider.max_concurrency = 3
    fake_provider.latency = 0.05
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 20)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, concurrency=8,
                   use_cache=False)

    result = run_now(sessions, run.id)

    assert (result.status, result.graded, result.failed) == ("done", 20, 0)
    assert fake_provider.rate_limited > 0 and result.rate_limited == fake_provider.rate_limited
    assert fake_provider.requests == 60 + fake_provider.rate_limited
    stats = limiter_for(MODEL, fake_provider.api_base, 8).stats()
    # Capacity discovery: the limit came down to about the cap (4 -> 3 after the first 429s).
    assert stats.decreases >= 1 and stats.lowest_limit <= 4
    # The limiter keeps 429s rare: after the first burst, one probe per few rounds (~20 here;
    # a fixed concurrency of 8 against a cap of 3 would get a 429 for most calls of a round).
    assert fake_provider.rate_limited <= 30, fake_provider.rate_limited

    # The provider lifts its cap: the same limiter probes past the old cap, up to at most 8.
    # Probes go every 8 rounds, up to every 64 after refused ones (the first run may have
    # had a few): 150 rounds of 3 calls leave room for two probes at the longest interval.
    fake_provider.reset()
    fake_provider.latency = 0.02
    dataset, _ = make_dataset(sessions, 150, name="More answers")
    again = make_run(sessions, version.id, dataset.id, fake_provider.api_base, concurrency=8,
                     use_cache=False)
    assert run_now(sessions, again.id).status == "done"
    assert 3 < limiter_for(MODEL, fake_provider.api_base, 8).stats().limit <= 8
    # ... and really sent more at once than the old cap allowed.
    assert fake_provider.rate_limited == 0 and fake_provider.max_in_flight > 3


def test_retry_after_is_honoured(sessions, fake_provider):
    fake_provider.enqueue(Reply(status=429, headers={"Retry-After": "1"}))
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 1)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    result = run_now(sessions, run.id)
    assert result.status == "done" and result.failed == 0
    times = fake_provider.request_times
    assert len(times) == 2 and times[1] - times[0] >= 0.95


def test_progress_shows_rate_and_eta_while_running(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 4)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1")
    from storage.jobs import queue

    queue.claim_run(sessions, run.id, "w1")
    report = EvaluationReport(score=None, error="judge failed",
                              token_usage=TokenUsage(prompt_tokens=5, total_tokens=5),
                              completion_cost=0.25)
    runs.record_grade(sessions, run.id, responses[0].id, report)
    progress = run_progress(sessions, run.id)
    assert (progress.graded, progress.failed, progress.pending) == (1, 1, 3)
    # the bar shows grades with a score: a failure is counted apart, not as progress
    assert progress.fraction == 0.0 and progress.cost == 0.25
    assert progress.rate_per_s is not None and progress.rate_per_s > 0
    assert progress.eta_s == pytest.approx(3 / progress.rate_per_s)


def test_a_cleared_cache_is_asked_again(sessions, fake_provider):
    from storage.jobs.cache import clear_cache

    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    run_now(sessions, make_run(sessions, version.id, dataset.id, fake_provider.api_base).id)
    assert clear_cache(sessions, model="openai/other") == 0
    assert clear_cache(sessions, model=MODEL) == 6
    run_now(sessions, make_run(sessions, version.id, dataset.id, fake_provider.api_base).id)
    assert fake_provider.requests == 12


def test_a_price_set_for_an_unpriced_model_makes_the_run_cost_known(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    priced = runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader="per_criterion",
        model=MODEL, settings={"api_base": fake_provider.api_base, "extra": {"use_cache": False},
                               "price": {"input_per_million": 2.0, "output_per_million": 8.0}},
        actor=ADMIN)
    unpriced = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                        use_cache=False)

    run_now(sessions, priced.id)
    run_now(sessions, unpriced.id)

    # 2 responses x 3 criteria, each call 11 prompt and 7 completion tokens (the fake's usage).
    expected = 6 * (11 * 2.0 + 7 * 8.0) / 1_000_000
    progress = run_progress(sessions, priced.id)
    assert progress.cost == pytest.approx(expected) and progress.unknown_cost_count == 0
    assert [g.cost for g in runs.list_grades(sessions, priced.id)] == [
        pytest.approx(expected / 2)] * 2
    litellm_only = run_progress(sessions, unpriced.id)  # litellm has no price for the fake
    assert litellm_only.cost is None and litellm_only.unknown_cost_count == 2
