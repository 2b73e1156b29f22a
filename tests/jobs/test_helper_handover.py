"""``grade --workers N`` tells its helpers to go once its own opening round has taught the
endpoint's cap, each with an equal share of the limit (``storage.jobs.helper_handover.
set_to_work_after_opening``). The helpers here are real processes reading their go line."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from grading.capacity import CapacitySnapshot
from grading.limiter import limiter_for, share_ceilings
from storage.jobs import helper_handover
from storage.jobs.helper_handover import _learned, set_to_work_after_opening
from tests.jobs.helpers import MODEL, make_dataset, make_rubric, make_run

API_BASE = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def whole_ceilings():
    """The handover leaves this process 1/N of every ceiling (``grade`` gives it back)."""
    yield
    share_ceilings(1.0)


def _snapshot(**values) -> CapacitySnapshot:
    base = dict(limit=16.0, ceiling=None, slow_start=True, refused_at=None, probe_rounds=8,
                short_latency=None, long_latency=None, paused_until=0.0, decreases=0,
                refusals=0, refused_rounds=0, lowest_limit=16.0, opening_limit=16.0,
                opened=True)
    return CapacitySnapshot(**{**base, **values})


def test_what_the_opening_taught_is_split_once_the_cap_is_found_or_far_away():
    assert not _learned(_snapshot(opened=False, slow_start=False), False)  # answers out
    assert not _learned(_snapshot(opened=False), True)
    assert _learned(_snapshot(slow_start=False, refused_at=9.0, limit=8.0), False)  # cap found
    assert not _learned(_snapshot(limit=24.0), False)  # in slow start, near the opening
    assert _learned(_snapshot(limit=64.0), False)  # 4x the opening, unrefused: no cap near
    assert _learned(_snapshot(limit=24.0), True)  # our CPU is the bound
    assert _learned(_snapshot(limit=10.0, ceiling=10, own_ceiling=10), False)  # user's cap
    # A wave of slow start out: its answers say whether the cap is found, busy or not.
    assert not _learned(_snapshot(limit=64.0, probing=True), True)
    assert _learned(_snapshot(slow_start=False, refused_at=9.0, limit=8.0, probing=True), False)


def _answer(limiter, calls, *, cap: int, now: float) -> None:
    """The provider answers the calls up to level ``cap`` and refuses those above."""
    for call in calls:
        if call.level <= cap:
            limiter.update(lambda e, _now, c=call: e.succeeded(c, now))
        else:
            limiter.update(lambda e, _now, c=call: e.refused(c, now))


def _helper() -> subprocess.Popen:
    """A process that prints the go line it is told (as a standby helper reads it)."""
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; print(sys.stdin.readline(), end='')"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _told(helper: subprocess.Popen) -> str:
    """What the helper was told (its standard input is closed once it is told to go)."""
    said = helper.stdout.read()
    helper.wait(10)
    return said


def test_helpers_go_after_the_opening_round_with_equal_shares_of_what_it_found(sessions):
    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, 4)
    run = make_run(sessions, version.id, dataset.id, API_BASE)
    limiter = limiter_for(MODEL, API_BASE)
    helpers = [_helper(), _helper()]

    async def scenario() -> None:
        told = asyncio.create_task(set_to_work_after_opening(sessions, [run.id], helpers))
        calls = [limiter.update(lambda e, _now: e.start(0.0)) for _ in range(12)]
        await asyncio.sleep(0.2)
        assert not told.done()  # the opening's answers are still out
        assert all(helper.poll() is None for helper in helpers)
        _answer(limiter, calls, cap=9, now=0.2)  # the provider takes 9 of the 12 at once
        await asyncio.wait_for(told, 5.0)

    try:
        asyncio.run(scenario())
        lines = [json.loads(_told(helper).removeprefix("go ")) for helper in helpers]
    finally:
        for helper in helpers:
            helper.kill()
    assert [line["runs"] for line in lines] == [[run.id], [run.id]]
    shares = [line["shares"] for line in lines]
    # Of the 9 found, this process keeps 3 and hands 3 to each helper, the cap known (they
    # probe above their share, never slow-start into it), with a third of any ceiling.
    assert limiter.limit == 3.0
    for (model, api_base, share, known, part), in shares:
        assert (model, api_base.rstrip("/"), share, known) == (MODEL, API_BASE, 3.0, True)
        assert abs(part - 1 / 3) < 1e-9


def test_helpers_go_at_once_when_no_work_is_left_to_wait_for(sessions, monkeypatch):
    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, 4)
    run = make_run(sessions, version.id, dataset.id, API_BASE)
    helpers = [_helper()]
    # No call ever starts (every grade answered from the cache) and no chunk is open: the
    # helper is told to go within a second or so, not after OPENING_SECONDS.
    monkeypatch.setattr(helper_handover, "OPENING_SECONDS", 20.0)
    try:
        started = asyncio.run(_timed(set_to_work_after_opening(sessions, [run.id], helpers)))
        line = _told(helpers[0])
    finally:
        helpers[0].kill()
    assert line.startswith("go ") and started < 5.0, (line, started)


async def _timed(awaitable) -> float:
    loop = asyncio.get_running_loop()
    begun = loop.time()
    await awaitable
    return loop.time() - begun



def test_helpers_go_at_once_without_shares_when_their_runs_cannot_be_read(sessions, caplog):
    # The runs are gone (or the database away) when the command would read their models:
    # the helpers are not held back; they start on their own part, as before shares.
    helpers = [_helper()]
    try:
        started = asyncio.run(_timed(set_to_work_after_opening(sessions, [987654], helpers)))
        line = _told(helpers[0])
    finally:
        helpers[0].kill()
    assert json.loads(line.removeprefix("go ")) == {"runs": [987654], "shares": []}
    assert started < 5.0 and "without a share of the limit" in caplog.text


def test_a_busy_process_splits_after_its_slow_start_wave_is_answered_not_during_it(
        sessions, monkeypatch):
    # Traced at a cap of 32: the grading process, busy for most of a core, split at 32 with
    # a wave of 16 probes out; they were refused just after, and both processes went on
    # slow-starting from 16 each into the cap (33 calls refused in 0.3 s). A busy process
    # sends no new wave, waits for the one out, and splits what its answers taught.
    from storage.jobs import autoscale

    monkeypatch.setattr(autoscale, "BUSY_SHARE", 0.0)  # the real meter reads "busy" always
    api_base = "http://127.0.0.1:9/busy/v1"
    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, 4)
    run = make_run(sessions, version.id, dataset.id, api_base)
    limiter = limiter_for(MODEL, api_base)
    helpers = [_helper()]

    async def scenario() -> None:
        opening = [limiter.update(lambda e, _now: e.start(0.0)) for _ in range(8)]
        for call in opening:  # all answered: slow start arms its next wave
            limiter.update(lambda e, _now, c=call: e.succeeded(c, 0.2))
        wave = [limiter.update(lambda e, _now: e.start(0.2)) for _ in range(8)]
        first = wave.pop(0)  # its answer, the limit in use, arms the next wave: 8 probes
        limiter.update(lambda e, _now: e.succeeded(first, 0.3))
        while limiter.update(lambda e, _now: e.can_start(0.3)):
            wave.append(limiter.update(lambda e, _now: e.start(0.3)))
        assert len(wave) == 16 and sum(call.probe for call in wave) == 8
        assert limiter.snapshot().probing
        told = asyncio.create_task(set_to_work_after_opening(sessions, [run.id], helpers))
        await asyncio.sleep(0.5)
        assert not told.done()  # busy, but the wave's answers are out
        assert limiter.snapshot().cpu_bound  # told: no new wave once this one is answered
        _answer(limiter, wave, cap=8, now=0.4)  # the provider takes 8: the probes are refused
        await asyncio.wait_for(told, 5.0)

    try:
        asyncio.run(scenario())
        line = json.loads(_told(helpers[0]).removeprefix("go "))
    finally:
        helpers[0].kill()
    # The cap found (8) is split, known: neither share slow-starts into it again.
    ((_model, _api_base, share, known, _part),) = line["shares"]
    assert (limiter.limit, share, known) == (4.0, 4.0, True)
    assert not limiter.snapshot().slow_start
