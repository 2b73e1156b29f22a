"""What a process learned of an endpoint's capacity is where the next one starts
(``grading.capacity_memory``): the file, the claim a live process keeps for itself, how an
estimate resumes from it (fake clock), and two real processes grading one after the other
against the local fake provider."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grading import capacity_memory
from grading.capacity import INITIAL_LIMIT, CapacityEstimate
from grading.limiter import AdaptiveLimiter, limiter_key
from tests.grading.capacity_simulation import HELD, Simulation, cap_of, flat

ROOT = Path(__file__).resolve().parents[2]
KEY = limiter_key("openai/judge", "https://user:s3cret@models.example.com/v1")


def _file() -> Path:
    return capacity_memory.path()


def test_a_limit_remembered_is_where_the_next_claim_starts():
    assert capacity_memory.claim(KEY) is None  # nothing known yet
    capacity_memory.remember(KEY, 48.0, True)
    assert capacity_memory.claim(KEY) == (48.0, True)
    capacity_memory.remember(KEY, 100.0)  # the last word is what is remembered
    assert capacity_memory.claim(KEY) == (100.0, False)


def test_the_file_names_no_endpoint_and_no_credential():
    capacity_memory.remember(KEY, 12.0)
    text = _file().read_text()
    for secret in ("s3cret", "user", "models.example.com", "judge", "openai"):
        assert secret not in text
    assert json.loads(text)[capacity_memory.endpoint_id(KEY)]["limit"] == 12.0


def test_an_old_memory_is_ignored_and_dropped():
    long_ago = 1_000_000.0
    capacity_memory.remember(KEY, 64.0, now=long_ago)
    later = long_ago + capacity_memory.FORGET_SECONDS + 1
    assert capacity_memory.claim(KEY, now=later) is None
    other = limiter_key("openai/other", None)
    capacity_memory.remember(other, 8.0, now=later)
    assert capacity_memory.endpoint_id(KEY) not in json.loads(_file().read_text())


def test_a_process_at_work_on_the_endpoint_keeps_the_memory_to_itself():
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _file().parent.mkdir(parents=True, exist_ok=True)
        entry = {"limit": 64.0, "capped": False, "seen": time.time(),
                 "pid": holder.pid}
        _file().write_text(json.dumps({capacity_memory.endpoint_id(KEY): entry}))
        # Live (its process runs, it wrote just now): a second process starts cold beside it.
        assert capacity_memory.claim(KEY) is None
    finally:
        holder.kill()
        holder.wait()
    # Once it has stopped, its level is the next process's start, and that one holds it.
    assert capacity_memory.claim(KEY) == (64.0, False)
    assert json.loads(_file().read_text())[capacity_memory.endpoint_id(KEY)]["pid"] == os.getpid()


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"x": {"limit": "many"}}', ""])
def test_an_unreadable_file_is_as_if_there_were_none(content):
    _file().parent.mkdir(parents=True, exist_ok=True)
    _file().write_text(content)
    assert capacity_memory.claim(KEY) is None
    capacity_memory.remember(KEY, 20.0)
    assert capacity_memory.claim(KEY) == (20.0, False)


def test_a_cache_directory_that_cannot_be_written_is_as_if_there_were_no_memory(
        monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(capacity_memory.CACHE_DIR_ENV, str(blocker))
    capacity_memory.remember(KEY, 40.0)  # cannot be kept: no error either
    assert capacity_memory.claim(KEY) is None
    limiter = AdaptiveLimiter(memory_key=KEY)  # starts cold, works, and its write is skipped
    assert limiter.recalled is None and limiter.estimate.limit == INITIAL_LIMIT
    limiter.estimate.succeeded(limiter.estimate.start(0.0), 0.2)
    limiter.remember()
    assert blocker.read_text() == "not a directory"


def test_a_write_from_the_event_loop_skips_a_lock_held_elsewhere_instead_of_waiting():
    import fcntl

    capacity_memory.remember(KEY, 10.0)
    with open(_file().with_name(capacity_memory.FILE_NAME + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process, writing
        started = time.monotonic()
        capacity_memory.remember(KEY, 50.0, wait=False)
        assert time.monotonic() - started < 1.0
    assert capacity_memory.claim(KEY) == (10.0, False)  # skipped, not waited for
    capacity_memory.remember(KEY, 50.0, wait=False)  # the lock is free: written
    assert capacity_memory.claim(KEY) == (50.0, False)


def test_switched_off_nothing_is_read_or_written(monkeypatch):
    capacity_memory.remember(KEY, 30.0)
    monkeypatch.setenv(capacity_memory.SWITCH_ENV, "0")
    assert capacity_memory.claim(KEY) is None
    capacity_memory.remember(KEY, 99.0)
    monkeypatch.delenv(capacity_memory.SWITCH_ENV)
    assert capacity_memory.claim(KEY) == (30.0, False)


# -- an estimate resuming from memory (fake clock) --------------------------------------------
def _run(cap: int, remembered: tuple[float, bool] | None, work: int = 1600) -> Simulation:
    estimate = CapacityEstimate()
    if remembered is not None:
        estimate.resume(*remembered)
    return Simulation(estimate, cap_of(cap), flat(0.2), refusal_latency=HELD,
                      work=work).run()


def test_resuming_at_a_cap_refused_before_skips_slow_start_and_its_overshoot():
    cold, warm = _run(32, None), _run(32, (32.0, True))
    assert warm.limit_at(0.5) == 32  # half of it, then back up to it in one round
    assert cold.limit_at(0.5) < 32
    # Cold, slow start's last round goes a wave of 16 above the cap; warm, only single probes.
    assert cold.refused >= 16 and warm.refused <= 5, (cold.refused, warm.refused)
    assert warm.now < cold.now


def test_resuming_below_any_refusal_gets_there_in_a_round_and_goes_on_discovering():
    cold, warm = _run(128, None), _run(128, (128.0, False))
    assert cold.limit_at(1.0) <= 32 and warm.limit_at(1.0) == 128
    assert warm.now <= 0.8 * cold.now, (warm.now, cold.now)
    assert warm.refused_share <= 0.02
    grown = _run(256, (128.0, False), work=4000)  # more than remembered: slow start goes on
    assert grown.average_limit(3.0, grown.now) >= 0.9 * 256


def test_a_stale_memory_costs_one_round_not_the_run():
    fallen = _run(8, (128.0, True))  # the capacity fell since: half of the old level is refused
    assert fallen.finished() and fallen.average_limit(5.0, fallen.now) <= 8.5
    assert fallen.refused <= 64, fallen.refused
    # It grew since: the plateau is probed as after a refusal (every 8 rounds: sooner, and
    # probes answered by luck at the cap climb into it), then slow start goes on. The price,
    # once: ~1.5x a cold start's time to 1,600 calls, against 3x without the slow start.
    grown = _run(128, (32.0, True))
    cold = _run(128, None)
    assert grown.average_limit(5.0, grown.now) >= 0.8 * 128
    assert grown.now <= 1.6 * cold.now, (grown.now, cold.now)


def test_a_peer_found_at_work_makes_a_resuming_estimate_start_cold():
    estimate = CapacityEstimate()
    estimate.resume(64.0, True)
    assert estimate.limit == 32
    estimate.abandon_resume()
    assert estimate.limit == INITIAL_LIMIT and estimate.slow_start
    sim = Simulation(estimate, cap_of(64), flat(0.2), work=800).run()
    assert sim.limit_at(0.3) <= 2 * INITIAL_LIMIT  # no doubling up to the old level


# -- two real processes, one after the other ---------------------------------------------------
_GRADE = """
import asyncio, json, sys
from grading import Criterion, Rubric
from grading.autograders import PerCriterionGrader
from grading.limiter import limiter_for
from grading.llm import LiteLLMGenerate
api_base, responses = sys.argv[1], int(sys.argv[2])
limiter = limiter_for("openai/fake-judge", api_base)
start = {"recalled": limiter.recalled, "limit": limiter.estimate.limit}
rubric = Rubric([Criterion(requirement=f"Requirement {i}") for i in range(4)])
grader = PerCriterionGrader(LiteLLMGenerate("openai/fake-judge", api_base=api_base,
                                            api_key="k", timeout=10.0), retry_base_delay=0.01)
async def main():
    return await asyncio.gather(*(rubric.grade(f"answer {i}", autograder=grader)
                                  for i in range(responses)))
results = asyncio.run(main())
assert all(r.score == 1.0 for r in results), [r.error for r in results if r.score != 1.0]
end = limiter.estimate
print(json.dumps({**start, "end_limit": end.limit, "refusals": end.refusals,
                  "refused_at": end.refused_at}))
"""


def _grade_in_a_new_process(api_base: str, responses: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _GRADE, api_base, str(responses)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_process_on_an_endpoint_starts_where_the_first_left_off(fake_provider):
    fake_provider.latency = 0.05
    fake_provider.max_concurrency = 24
    first = _grade_in_a_new_process(fake_provider.api_base, 80)
    assert first["recalled"] is None and first["limit"] == INITIAL_LIMIT  # cold
    assert first["refusals"] >= 1  # it found the cap

    second = _grade_in_a_new_process(fake_provider.api_base, 80)
    remembered, capped = second["recalled"]
    assert remembered == pytest.approx(first["end_limit"], abs=0.1)
    assert capped == (first["refused_at"] is not None
                      and first["refused_at"] <= first["end_limit"] + 2)
    # Half of it, doubling back up to it in one round (what that saves: the simulations
    # above; a real provider's figures vary too much run to run to compare two runs).
    assert second["limit"] == max(INITIAL_LIMIT, math.floor(remembered / 2))
