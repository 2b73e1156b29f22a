"""A run's cost cap (``extra.cost_cap``, set by the Grade page for a panel's members) stops
it once it spent that much: failed, saying why, with the rest pending."""

from __future__ import annotations

import asyncio
import re

import pytest

from grading.errors import ConfigurationError
from storage.services import runs
from tests.actors import ADMIN
from tests.fake_provider import judge_reply
from tests.jobs.helpers import MODEL, make_dataset, make_rubric, run_now

# 1 USD per million tokens both ways: the fake provider's usage makes each grade cost > 0.
PRICE = {"input_per_million": 1.0, "output_per_million": 1.0}


def _run(sessions, api_base, cap, count=6):
    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, count)
    return runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader="per_criterion",
        model=MODEL, actor=ADMIN,
        settings={"api_base": api_base, "price": PRICE,
                  "extra": {"concurrency": 1, "use_cache": False,
                            **({"cost_cap": cap} if cap is not None else {})}})


def test_a_run_stops_at_its_cost_cap_and_keeps_what_it_graded(sessions, fake_provider):
    run = _run(sessions, fake_provider.api_base, cap=1e-9)
    result = run_now(sessions, run.id)
    assert result.status == "failed" and "cost cap ($1e-09)" in result.error
    info = runs.get_run(sessions, run.id)
    assert 1 <= info.graded_count < 6 and info.cost > 0
    assert "launch again with a higher cap" in info.error
    assert len(runs.pending_response_ids(sessions, run.id)) == 6 - info.graded_count


def test_a_run_under_its_cap_grades_everything(sessions, fake_provider):
    run = _run(sessions, fake_provider.api_base, cap=100.0)
    assert run_now(sessions, run.id).status == "done"
    assert runs.get_run(sessions, run.id).graded_count == 6


# 100,000 prompt tokens per call at 1 USD per million: every call costs exactly $0.10.
def _priced_reply(body):
    reply = judge_reply(body)
    reply.usage = {"prompt_tokens": 100_000, "completion_tokens": 0, "total_tokens": 100_000}
    return reply


def _answers(body) -> set[str]:
    """Which responses ('answer number i') a provider request asked about."""
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    return set(re.findall(r"answer number \d+", prompt))


def _launch_priced(sessions, fake_provider, count: int, concurrency: int, cap: float):
    """A run launched the way Grade launches one (its settings, a cap of its own) at $0.10 a
    call, graded over litellm's HTTP path; returns (its result, the run as stored)."""
    fake_provider.default = _priced_reply
    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, count)
    launch = runs.launch_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id,
        grader="per_criterion", model=MODEL, actor=ADMIN,
        settings={"api_base": fake_provider.api_base, "price": PRICE,
                  "extra": {"concurrency": concurrency, "use_cache": False,
                            "cost_cap": cap}})
    result = run_now(sessions, launch.run.id)
    return result, runs.get_run(sessions, launch.run.id)


def test_a_single_run_from_grade_stops_at_its_cap_and_makes_no_further_grades(
        sessions, fake_provider):
    """It stops once its cost reaches the cap, the responses after that are never sent to
    the provider, and the run says it was its cap."""
    result, info = _launch_priced(sessions, fake_provider, 8, concurrency=1, cap=0.6)
    assert result.status == "failed" and info.stopped_by_cost_cap
    # Three criteria a response at $0.10 a call: the cap is reached with the second grade.
    assert info.graded_count == 2 and info.cost == pytest.approx(0.6)
    # Responses already in flight when the cap is reached (the runner keeps a few ahead of
    # the one call at a time) may have been asked; nothing is started after the stop, so
    # the later responses were never sent to the provider.
    asked = {text for body in fake_provider.bodies for text in _answers(body)}
    assert {"answer number 0", "answer number 1"} <= asked
    assert asked <= {f"answer number {i}" for i in range(5)}
    assert 6 <= fake_provider.requests <= 12
    assert len(runs.pending_response_ids(sessions, info.id)) == 8 - info.graded_count
    assert "cost cap ($0.6)" in info.error and "higher cap" in info.error


def test_a_run_without_a_cap_is_not_reported_as_capped(sessions, fake_provider):
    run = _run(sessions, fake_provider.api_base, cap=None)
    run_now(sessions, run.id)
    assert not runs.get_run(sessions, run.id).stopped_by_cost_cap


@pytest.mark.parametrize("cap", [0, -1, "a lot", float("nan")])
def test_a_cap_that_is_not_a_positive_amount_is_refused_before_anything_is_written(
        sessions, cap):
    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, 2)
    with pytest.raises(ConfigurationError, match="cost cap must be a positive amount"):
        runs.launch_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                        grader="per_criterion", model=MODEL, actor=ADMIN,
                        settings={"extra": {"cost_cap": cap}})
    assert runs.list_runs(sessions) == []


def test_a_cap_on_a_model_with_no_price_fails_before_any_call(sessions, fake_provider):
    """Launched by the library (the pages and the command refuse it earlier): the run says
    why instead of grading everything past a cap it could never see."""
    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, 3)
    run = runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader="per_criterion",
        model=MODEL, actor=ADMIN,
        settings={"api_base": fake_provider.api_base, "extra": {"cost_cap": 1.0}})
    result = run_now(sessions, run.id)
    assert result.status == "failed"
    assert result.error == (
        "the cost cap ($1) cannot be kept: there is no price for openai/fake-judge, so its "
        "cost stays unknown; set its price per million tokens in Settings and launch again, "
        "or launch without a cap")
    assert fake_provider.requests == 0 and runs.get_run(sessions, run.id).graded_count == 0


def test_a_run_with_many_calls_in_flight_stops_before_its_cap_not_past_it(
        sessions, fake_provider):
    """Eight calls at a time, $0.30 a response: checking the cost after each answer let the
    whole window (about eight responses) go out, and the run spent twice its cap. Now a
    response starts only if it fits (those in flight counted at the average cost so far)."""
    result, info = _launch_priced(sessions, fake_provider, 12, concurrency=8, cap=1.0)
    assert result.status == "failed" and info.stopped_by_cost_cap
    # Three responses fit ($0.90); a fourth would have gone over, so it never started.
    assert info.graded_count == 3 and info.cost == pytest.approx(0.9)
    assert fake_provider.requests == 9  # every call sent was one the run paid and counted
    assert "one more response (about $0.3000 each) would have gone over it" in info.error
    assert len(runs.pending_response_ids(sessions, info.id)) == 9


def test_a_run_stopped_short_of_its_cap_and_requeued_sends_nothing_more(sessions,
                                                                       fake_provider):
    """Requeued as it is (same cap), a run that stopped because one more response would go
    over it does not send that response now: the new process starts from the average the run
    already paid, not from 'nothing known, one may go'."""
    _result, info = _launch_priced(sessions, fake_provider, 12, concurrency=8, cap=1.0)
    assert info.cost == pytest.approx(0.9) and fake_provider.requests == 9
    runs.requeue_run(sessions, info.id, actor=ADMIN)
    again = run_now(sessions, info.id)
    after = runs.get_run(sessions, info.id)
    assert again.status == "failed" and after.stopped_by_cost_cap
    assert fake_provider.requests == 9 and after.cost == pytest.approx(0.9)
    assert "would have gone over it" in after.error
    assert len(runs.pending_response_ids(sessions, info.id)) == 9


def test_a_run_with_a_cost_cap_is_never_joined_by_a_helper(sessions, fake_provider):
    # Its owner counts the responses it has in flight against the cap; a helper's it could
    # not, and each process spent up to the whole cap. Another worker takes whole runs only.
    from collections import Counter

    from storage.jobs.worker import Worker
    from tests.jobs.helpers import chunk_holders

    fake_provider.latency = 0.02
    capped = _run(sessions, fake_provider.api_base, cap=100.0, count=40)
    workers = [Worker(sessions, worker_id=f"w{i}", max_runs=1, poll_interval=0.05)
               for i in range(2)]

    async def both() -> None:
        await asyncio.gather(*(w.run(asyncio.Event(), until_idle=True) for w in workers))

    asyncio.run(both())

    info = runs.get_run(sessions, capped.id)
    assert info.status == "done" and info.graded_count == 40
    holders = chunk_holders(sessions, capped.id)
    assert set(holders) == {info.claimed_by}, holders  # every chunk graded by its owner
    assert Counter(r.run_id for w in workers for r in w.results) == {capped.id: 1}
