"""A server that cannot cancel a call we gave up on (llama.cpp, llama-cpp-python) keeps
running it, and a retry sent at once queues behind it and times out too (issue 36, item 4).
After a timeout the next call to that server waits until a one-token probe is answered,
and a timeout at level n lowers the endpoint's limit below n. Real HTTP through litellm to
the fake provider serving one request at a time and finishing every request it took."""

from __future__ import annotations

import json

import pytest

from grading import Rubric, Verdict
from grading.autograders import PerCriterionGrader
from grading.busy_server import BusyServers
from grading.limiter import limiter_for
from grading.llm import LiteLLMGenerate
from tests.fake_provider import Reply, is_probe

MET = json.dumps({"verdict": "MET", "reason": "the response does this"})
SERVICE = 0.5  # seconds the one-slot server takes per request
TIMEOUT = 1.5  # seconds we wait for one answer
RUNAWAY = 4.0  # the call that runs on past our timeout (its service on top)
FAST = {"retry_base_delay": 0.01, "retry_max_delay": 0.02}


def _judge(fake, model: str, timeout: float = TIMEOUT) -> LiteLLMGenerate:
    # json_schema, not auto: auto's first call to an endpoint goes alone (it learns what the
    # server accepts), and the three calls of the second test must reach the server at once
    return LiteLLMGenerate(model, api_base=fake.api_base, api_key="test-key", timeout=timeout,
                           structured_output="json_schema")


async def test_a_retry_after_a_timeout_waits_for_the_abandoned_call_and_is_answered(
        fake_provider):
    fake_provider.serve_at_once(1)
    fake_provider.latency = SERVICE
    usage = {"prompt_tokens": 50, "completion_tokens": 40, "total_tokens": 90}
    fake_provider.enqueue(Reply(MET, usage=usage),  # an ordinary answer: the speed
                          Reply(MET, delay=RUNAWAY, usage=usage))  # runs on past the timeout
    grader = PerCriterionGrader(_judge(fake_provider, "openai/busy-runaway"),
                                transport_retries=2, **FAST)
    rubric = Rubric.from_dict([{"weight": 1, "requirement": "Says hello"}])
    assert (await rubric.grade("hello", autograder=grader)).report[0].verdict is Verdict.MET

    result = await rubric.grade("hello", autograder=grader)

    # Before: the retry queued behind the abandoned answer, timed out, queued behind itself
    # ... three timeouts, the grade failed and the server ran every abandoned call.
    assert result.report[0].verdict is Verdict.MET, result.report[0].reason
    bodies = fake_provider.bodies
    # the warm-up, the call that ran on, one probe, the retry: nothing else
    assert len(bodies) == 4, [is_probe(b) for b in bodies]
    assert is_probe(bodies[2]) and not is_probe(bodies[3])
    # The probe queued behind the abandoned call (the server had two requests); the retry
    # went once the server was free: it alone was at the server.
    assert fake_provider.levels[2:] == [2, 1]


async def test_timeouts_in_a_one_slot_queue_lower_the_limit_and_every_criterion_is_graded(
        fake_provider):
    service, timeout = 1.5, 2.5  # margins of 1 s and 0.5 s either way: a loaded CI box
    # The process's first litellm call pays lazy imports and client set-up between the clock's
    # start and the server: a warm-up call to another model name (limits are per model) first.
    warm = PerCriterionGrader(_judge(fake_provider, "openai/busy-queue-warm-up"), **FAST)
    one = Rubric.from_dict([{"weight": 1, "requirement": "Says hello"}])
    assert (await one.grade("hello", autograder=warm)).report[0].verdict is Verdict.MET
    fake_provider.bodies.clear()
    fake_provider.levels.clear()
    fake_provider.serve_at_once(1)
    fake_provider.latency = service
    model = "openai/busy-queue"
    grader = PerCriterionGrader(_judge(fake_provider, model, timeout), transport_retries=2,
                                **FAST)
    rubric = Rubric.from_dict([{"weight": 1, "requirement": f"Point {n}"} for n in (1, 2, 3)])

    result = await rubric.grade("hello", autograder=grader)

    # The three calls go at once; the server answers the first in 1.5 s, the second and
    # third would take 3 s and 4.5 s: they time out, the limit drops to one. (Whichever call
    # reaches the server first: on a loaded CI box the first started was served second and
    # taught nothing, "a call alone"; the limit stayed at two, both retries went at once.)
    assert [r.verdict for r in result.report] == [Verdict.MET] * 3, [
        r.reason for r in result.report]
    assert limiter_for(model, fake_provider.api_base).limit == 1
    bodies = fake_provider.bodies
    retries = [level for body, level in zip(bodies[3:], fake_provider.levels[3:], strict=True)
               if not is_probe(body)]
    # Three calls, one probe behind the two abandoned ones, two retries that each had the
    # server to themselves (before: both retries queued behind the abandoned calls and
    # timed out again, the limit stayed at four and the grade lost two criteria).
    assert len(bodies) == 6 and sum(map(is_probe, bodies)) == 1, [
        (is_probe(b), level) for b, level in zip(bodies, fake_provider.levels, strict=True)]
    assert retries == [1, 1]


def test_the_probe_waits_for_what_the_abandoned_answers_can_take():
    now = [100.0]
    busy = BusyServers(clock=lambda: now[0])
    busy.answered("m", "b", tokens=100, seconds=2.0)  # 50 tokens/s
    busy.answered("m", "b", tokens=100, seconds=4.0)  # 25 tokens/s: the slowest counts
    busy.answered("m", "b", tokens=3, seconds=9.0)  # too short to say the speed
    assert busy.busy("m", "b") == 0 and busy.probe_timeout("m", "b", 10.0) == 10.0
    busy.gave_up("m", "b", cap_tokens=320, waited=10.0)  # 320 / 25 = 12.8 s more at most
    busy.gave_up("m", "b", cap_tokens=None, waited=10.0)  # no cap: as long as we waited
    assert busy.busy("m", "b") == 2 and busy.busy("m", "other") == 0
    assert busy.probe_timeout("m", "b", 10.0) == pytest.approx(12.8 + 10.0 + 10.0)
    now[0] += 5.0
    assert busy.probe_timeout("m", "b", 10.0) == pytest.approx(7.8 + 10.0 + 10.0)
    busy.free("m", "b")
    assert busy.busy("m", "b") == 0


def test_a_timeout_at_level_n_takes_the_limit_below_n_and_a_round_pays_once():
    from grading.capacity import CapacityEstimate

    estimate = CapacityEstimate()
    calls = [estimate.start(0.0) for _ in range(4)]
    assert [c.level for c in calls] == [1, 2, 3, 4]
    estimate.succeeded(calls[0], 1.0)
    estimate.timed_out(calls[2], 2.0)  # the server did not answer three in time
    assert estimate.limit == 2 and estimate.refused_at == 3
    estimate.timed_out(calls[3], 2.1)  # the same round: already paid for
    assert estimate.limit == 2 and estimate.decreases == 1
    estimate.timed_out(calls[1], 2.1)  # the same round, but lower: fewer than two at once
    assert estimate.limit == 1 and estimate.refused_at == 2 and estimate.decreases == 1
    assert estimate.in_flight == 0

    # Calls race to the server: the first started timed out behind the second's answer, so
    # it was second in the server's queue, not alone at it.
    raced = CapacityEstimate()
    first, second, third = (raced.start(0.0) for _ in range(3))
    raced.succeeded(second, 1.5)
    raced.timed_out(first, 2.5)
    assert raced.limit == 1 and raced.refused_at == 2
    raced.timed_out(third, 2.5)  # the same round: third, and overtaken by one
    assert raced.limit == 1 and raced.decreases == 1

    alone = CapacityEstimate(initial=1)
    call = alone.start(0.0)
    alone.timed_out(call, 5.0)  # one call, slow on its own: says nothing of parallelism
    assert alone.limit == 1 and alone.refused_at is None and alone.decreases == 0


async def test_a_call_cut_off_by_the_call_deadline_is_waited_for_too(fake_provider):
    fake_provider.serve_at_once(1)
    rubric = Rubric.from_dict([{"weight": 1, "requirement": "Says hello"}])
    grader = PerCriterionGrader(_judge(fake_provider, "openai/busy-deadline", timeout=30.0),
                                **FAST)
    assert (await rubric.grade("hello", autograder=grader)).report[0].verdict is Verdict.MET
    fake_provider.enqueue(Reply(MET, delay=3.0))  # still running when the deadline cuts it
    cut = PerCriterionGrader(_judge(fake_provider, "openai/busy-deadline", timeout=30.0),
                             call_deadline=1.0, on_error="report", **FAST)
    assert (await rubric.grade("hello", autograder=cut)).report[0].verdict is None

    result = await rubric.grade("hello", autograder=grader)

    assert result.report[0].verdict is Verdict.MET
    bodies = fake_provider.bodies
    assert len(bodies) == 4 and is_probe(bodies[2]) and not is_probe(bodies[3])
    assert fake_provider.levels[2:] == [2, 1]  # the probe queued; the question went alone


def test_each_event_loop_gets_its_own_probe_lock_and_a_finished_loop_leaves_none_behind():
    import asyncio
    import gc

    busy = BusyServers()

    async def lock():
        first = busy.probing("m", "b")
        assert busy.probing("m", "b") is first  # one probe at a time per endpoint and loop
        async with first:  # usable in this loop
            pass
        return first

    locks = [asyncio.run(lock()) for _ in range(3)]
    assert len({id(lk) for lk in locks}) == 3
    gc.collect()
    assert len(busy._probes) == 0
