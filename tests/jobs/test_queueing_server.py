"""A server that runs a few requests at once and queues the rest (llama-cpp-python's one
slot), never refusing: the runner's limiter reads the queue off the latency, sends only as
many calls as the server runs, no call times out in its queue, and the run says so (issue 36
item 3). Real SQLite file, real litellm HTTP path, the fake provider in its own process."""

from __future__ import annotations

import time

import pytest

from grading.limiter import limiter_for
from storage.jobs.notices import get_notice
from tests.jobs.helpers import CRITERIA, MODEL, make_dataset, make_rubric, make_run, run_now
from tests.provider_process import ProviderProcess

# Seconds the server takes per request: 0.6, not 0.3, so a loaded machine's scheduling delays
# stay small beside the queue's delays the limiter reads (at 0.3, under the CI's load, slow
# start once went on to 14 calls before the queue showed, and two timed out at 4 s).
SERVICE = 0.6
# A call's timeout: a queue of 24 (what slow start reached before) would take 14.4 s; the
# queue of the opening round (4 calls, 2.4 s) and of slow start's first wave fit, on a loaded
# machine too.
TIMEOUT = 8.0


@pytest.fixture(scope="module")
def provider_process():
    provider = ProviderProcess()
    yield provider
    provider.stop()


def _grade(sessions, provider_process, responses: int):
    version = make_rubric(sessions, criteria=CRITERIA[:1])  # one verdict per response
    dataset, _ = make_dataset(sessions, responses)
    run = make_run(sessions, version.id, dataset.id, provider_process.api_base,
                   use_cache=False, timeout=TIMEOUT, retry_passes=1, pass_delay=0.05)
    started = time.monotonic()
    result = run_now(sessions, run.id)
    return run, result, time.monotonic() - started


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_one_slot_server_gets_one_call_at_a_time_and_no_call_times_out(
        sessions, backend, provider_process):
    provider_process.reset(latency=SERVICE, cap=None, slots=1)
    run, result, _ = _grade(sessions, provider_process, 30)

    assert (result.status, result.graded, result.failed) == ("done", 30, 0)
    stats = provider_process.stats()
    # One request per verdict: none timed out in the queue and was sent again (before: 74
    # requests for 50 verdicts against a real one-slot server).
    assert stats["requests"] == 30, (stats["requests"], stats["levels"])
    # Once the answers showed the queue (after the opening round, or a wave of slow start
    # on a loaded machine, whose requests reach the server out of order), one call at a
    # time: the server's count as each request arrived, queued ones included (one above
    # while the server writes an answer the client already read).
    levels = stats["levels"]
    assert max(levels) <= 12, levels  # slow start went on to 24
    assert max(levels[-8:]) <= 2, levels
    snapshot = limiter_for(MODEL, provider_process.api_base).snapshot()
    assert snapshot.queue_slots == 1 and snapshot.limit == 1
    notice = get_notice(sessions, run.id)
    assert notice is not None and "the server answers one call at a time" in notice


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_four_slot_server_still_gets_about_four_calls_at_a_time(
        sessions, backend, provider_process):
    provider_process.reset(latency=SERVICE, cap=None, slots=4)
    _, result, wall = _grade(sessions, provider_process, 48)

    assert (result.status, result.graded, result.failed) == ("done", 48, 0)
    stats = provider_process.stats()
    assert stats["requests"] == 48, stats["requests"]
    levels = stats["levels"]
    # Calls in parallel to the end: most requests of the second half found 3 or more at
    # the server (itself included). (Slow start may queue up to 16 there before the queue
    # shows through a loaded machine's noise: 1.2 s, far from the timeout.)
    late = levels[24:]
    assert sorted(late)[len(late) // 2] >= 3, levels
    snapshot = limiter_for(MODEL, provider_process.api_base).snapshot()
    assert snapshot.queue_slots is None or snapshot.queue_slots >= 2, snapshot
    # And it took about a quarter of one-at-a-time's time (48 x 0.3 s = 14.4 s), with a
    # generous margin for a loaded machine.
    assert wall < 0.7 * 48 * SERVICE, wall
