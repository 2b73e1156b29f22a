"""``grade --workers auto``: a helper process joins when grading is CPU-bound, and only then.

The decision is tested on samples; the processes for real: ``grade`` through the command
line against the local fake provider and a real SQLite file (and PostgreSQL), with helper
processes that really start, stand by, join the run or are dismissed.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from storage import cli
from storage.engine import open_database
from storage.jobs import autoscale, helper_handover
from storage.jobs.autoscale import MachineMeter, Sample, wants_helper
from storage.services import runs
from tests.jobs.helpers import (
    assert_each_response_asked,
    chunk_holders,
    standby_helpers,
    write_grade_inputs,
)

ROOT = Path(__file__).resolve().parents[2]
BUSY, IDLE = Sample(own_share=0.97, idle_cores=0.9), Sample(own_share=0.3, idle_cores=0.9)


def _wants(recent, **state) -> bool:
    given = {"open_chunks": 5, "helpers": 0, "max_helpers": 1, "since_last": 60.0, **state}
    return wants_helper(recent, **given)


def test_a_helper_is_wanted_only_when_the_process_is_the_bound_and_a_core_is_free():
    assert _wants([BUSY, BUSY])
    # A process waiting on the provider (a rate limit, a slow model) uses little CPU.
    assert not _wants([BUSY, IDLE])
    assert not _wants([IDLE, BUSY])
    assert not _wants([BUSY])  # one busy second is not yet sustained
    # No idle core now: a helper would only take CPU from this process.
    assert not _wants([BUSY, Sample(own_share=0.99, idle_cores=0.1)])
    # ... but a core busy a moment ago (a standby helper importing) does not count.
    assert _wants([Sample(own_share=0.99, idle_cores=0.0), BUSY])


def test_a_helper_is_not_wanted_while_the_provider_refuses_calls():
    # The provider is a bound too: a second process would mostly add 429s.
    refused = Sample(own_share=0.97, idle_cores=0.9, refused=True)
    quiet = [BUSY] * autoscale.QUIET_SAMPLES
    assert not _wants([*quiet, refused])
    assert not _wants([*quiet[1:], refused, *quiet[:-1]])
    assert _wants([refused, *quiet])  # long enough ago


def test_a_helper_is_not_wanted_while_the_provider_is_the_bound():
    # Busy, a core free, no storm, but every endpoint's limit sits at its provider's cap: a
    # second process would split the same calls and probe into the cap from two sides.
    at_cap = Sample(own_share=0.97, idle_cores=0.9, provider="at cap")
    assert not _wants([BUSY, at_cap])
    assert _wants([at_cap, BUSY])  # below the cap again now (the capacity grew)
    # Before an endpoint has answered anything, a busy process is busy starting up, and
    # whether the provider is the bound is not known yet.
    learning = Sample(own_share=0.97, idle_cores=0.9, provider="learning")
    assert not _wants([learning, BUSY])
    assert not _wants([BUSY, learning])
    assert _wants([learning, BUSY, BUSY])


def test_a_helper_is_not_wanted_without_work_left_a_core_for_it_or_time_since_the_last():
    assert not _wants([BUSY, BUSY], open_chunks=1)
    assert not _wants([BUSY, BUSY], helpers=1, max_helpers=1)
    assert not _wants([BUSY, BUSY], max_helpers=0)
    assert not _wants([BUSY, BUSY], since_last=autoscale.GAP / 2)
    assert _wants([BUSY, BUSY], helpers=1, max_helpers=3)


def test_the_meter_tells_a_busy_process_from_a_waiting_one():
    meter = MachineMeter()
    until = time.process_time() + 0.4
    while time.process_time() < until:
        pass
    busy = meter.sample()
    time.sleep(0.4)
    waiting = meter.sample()
    assert busy.own_share > 0.3 > waiting.own_share  # generous: CI shares its two cores
    assert 0.0 <= waiting.idle_cores <= meter.cores








def _force_a_helper_to_join(monkeypatch) -> None:
    """"CPU-bound" made certain (any share of a core counts as busy, any idle as enough), and
    "not at the provider's cap" too (no limit is ever close enough to its refused level: at a
    cap the provider is the bound and no helper joins)."""
    for name, value in (("BUSY_SHARE", 0.0), ("IDLE_CORES", 0.0), ("SUSTAINED", 1),
                        ("GAP", 0.0), ("MAX_HELPERS", 1), ("QUIET_SAMPLES", 0)):
        monkeypatch.setattr(autoscale, name, value)
    monkeypatch.setattr(helper_handover, "AT_CAP_SHARE", math.inf)


def _grade(tmp_path, fake_provider, db_url, capsys, *, count: int, latency: float,
           cap: int | None) -> str:
    """``grade`` through the command line with its defaults; its standard error."""
    fake_provider.latency = latency
    fake_provider.max_concurrency = cap
    status = cli.main([*write_grade_inputs(tmp_path, count), "--api-base", fake_provider.api_base,
                       "--db", db_url])
    err = capsys.readouterr().err
    assert status == 0, err
    return err


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_auto_puts_the_standby_helper_to_work_when_grading_is_cpu_bound(
        db_url, tmp_path, fake_provider, capsys, monkeypatch):
    # The processes, the database and the provider are real; only the decision is forced.
    _force_a_helper_to_join(monkeypatch)
    # 30 s of work (240 calls, 4 at a time, 0.5 s each): time for the helper to import
    # litellm on a busy machine and join.
    count = 240
    err = _grade(tmp_path, fake_provider, db_url, capsys, count=count, latency=0.5, cap=4)

    assert "grading was CPU-bound: 1 helper worker joined" in err
    assert_each_response_asked(fake_provider.answered, count)
    assert len(chunk_holders(open_database(db_url))) == 2  # the helper graded chunks of the run too
    grades = runs.list_grades(open_database(db_url), 1)
    assert len(grades) == count and all(g.score == 1.0 for g in grades)
    assert standby_helpers(db_url) == []


@pytest.mark.parametrize("busy", [False, True], ids=["waiting", "busy-at-the-cap"])
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_auto_leaves_a_run_bound_by_its_provider_to_one_process(
        db_url, tmp_path, fake_provider, capsys, monkeypatch, busy):
    # A slow provider and a low cap: the process waits, it is not the bound. The standby
    # helper (started: the run is big enough) is never put to work, and is stopped.
    # "busy": "CPU-bound" made certain as above, but the provider takes 2 calls at once and
    # the limiter found that: the provider is the bound, a helper would add only 429s.
    if busy:
        for name, value in (("BUSY_SHARE", 0.0), ("IDLE_CORES", 0.0), ("GAP", 0.0),
                            ("MAX_HELPERS", 1)):
            monkeypatch.setattr(autoscale, name, value)
    count = 120
    err = _grade(tmp_path, fake_provider, db_url, capsys, count=count, latency=0.2, cap=2)

    assert "helper worker" not in err
    assert len(chunk_holders(open_database(db_url))) == 1
    assert_each_response_asked(fake_provider.answered, count)
    assert standby_helpers(db_url) == []


@pytest.mark.parametrize("workers", ["2", "auto"])
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_concurrency_caps_the_calls_of_the_command_not_of_each_of_its_processes(
        db_url, tmp_path, fake_provider, capsys, monkeypatch, workers):
    # --concurrency 4 with a helper: the provider never sees more than 4 calls at once, though
    # each process alone could climb to 4 (before: up to 8). "auto": a helper joins for
    # certain, as in the test above.
    if workers == "auto":
        _force_a_helper_to_join(monkeypatch)
    fake_provider.latency = 0.3
    count = 240  # 18 s at 4 in flight: time for the standby helper to import and join
    status = cli.main([*write_grade_inputs(tmp_path, count), "--api-base", fake_provider.api_base,
                       "--db", db_url, "--workers", workers, "--concurrency", "4"])
    err = capsys.readouterr().err

    assert status == 0, err
    assert len(chunk_holders(open_database(db_url))) == 2, err  # both processes graded
    # Outstanding at the provider (not yet being answered): its in-flight count also holds a
    # request whose answer is written but not yet counted out, one above (seen 1 run in 8).
    assert fake_provider.max_outstanding <= 4, err
    assert fake_provider.rate_limited == 0, err
    assert_each_response_asked(fake_provider.answered, count)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_standby_helper_that_is_never_told_to_go_exits_without_taking_work(db_url):
    command = [sys.executable, "-m", "storage.cli", "worker", "--db", db_url, "--until-idle",
               "--run", "1", "--standby"]
    helper = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert helper.stdout.readline().strip() == "ready"
    helper.stdin.close()  # the grading ended without needing it
    assert helper.wait(60) == 0
    assert "helps with run" not in helper.stderr.read()


@pytest.mark.parametrize("value", ["0", "-1", "many"])
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_workers_takes_a_number_or_auto_and_says_so(db_url, tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*write_grade_inputs(tmp_path, 1), "--db", db_url, "--workers", value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert ("argument --workers: must be a number of processes (1 or more) or auto, "
            f"got '{value}'") in err


def test_a_helper_told_to_go_takes_the_share_of_each_endpoint_it_was_handed():
    from grading.limiter import limiter_for
    from storage.jobs.helper_processes import go_line, take_go

    assert take_go("") is None  # stdin closed: not needed after all
    assert take_go("go\n") == []  # nothing handed over, the runs of its --run
    assert take_go(go_line(None, [3, 4])) == [3, 4]  # --workers N: its runs only
    assert take_go(go_line([["openai/share-test", "http://127.0.0.1:9", 12.0, True, 0.5],
                            ["openai/share-other", None, 3.0, False, 0.5]], [7])) == [7]
    handed = limiter_for("openai/share-test", "http://127.0.0.1:9").snapshot()
    assert (handed.limit, handed.refused_at, handed.slow_start) == (12.0, 13.0, False)
    discovering = limiter_for("openai/share-other", None).snapshot()
    assert (discovering.limit, discovering.refused_at, discovering.slow_start) == (
        3.0, None, True)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_scaler_of_grade_sees_when_every_endpoint_is_at_its_providers_cap(sessions,
                                                                              db_url):
    # The real scaler of ``--workers auto`` over two runs on two endpoints, and their real
    # limiters: at the cap only when both sit at the level their providers refused above.
    from grading.limiter import limiter_for
    from storage.jobs.helper_processes import auto_scaler
    from tests.jobs.helpers import make_dataset, make_rubric, make_run

    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 3)
    endpoints = ["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"]
    run_ids = [make_run(sessions, version.id, dataset.id, base).id for base in endpoints]
    scaler = auto_scaler(db_url, sessions, run_ids)
    limiters = [limiter_for("openai/fake-judge", base) for base in endpoints]

    def refused_above(limiter, level: int) -> None:  # a provider taking ``level`` calls
        def drive(estimate, now):
            calls = [estimate.start(now) for _ in range(level + 1)]
            for call in calls[:level]:
                estimate.succeeded(call, now + 0.2)
            estimate.refused(calls[level], now + 0.2)
        limiter.update(drive)

    assert scaler.provider() == "learning"  # nothing answered yet
    refused_above(limiters[0], 3)
    assert limiters[0].snapshot().refused_at == 4
    # The other endpoint has no call yet (a run answered from the cache, or held by another
    # worker, makes none): the one in use is at its cap.
    assert scaler.provider() == "at cap"
    limiters[1].update(lambda estimate, now: estimate.succeeded(estimate.start(now), now))
    assert scaler.provider() == "below cap"  # ... and once in use, it may take more
    refused_above(limiters[1], 2)
    assert scaler.provider() == "at cap"
    assert scaler.sample().provider == "at cap"
    # The provider takes more now: probes above the refused level are answered, and the
    # limit climbs past it to find the next cap. That is the provider's bound still.
    def rounds(estimate, now):
        for _ in range(40):
            calls = [estimate.start(now) for _ in range(estimate.slots - estimate.in_flight)]
            now += 0.2
            for call in calls:
                estimate.succeeded(call, now)
    limiters[1].update(rounds)
    grown = limiters[1].snapshot()
    assert grown.refused_at is None and grown.grew_past == 3 and grown.limit > 3
    assert scaler.provider() == "at cap"
    # ... and a share handed over then is of a known level: both halves probe above it,
    # neither slow-starts into the other's calls.
    assert limiters[1].update(lambda estimate, _now: estimate.give_share())[1] is True
    # Far below the refused level (our own CPU, a latency cut held it back): not at the cap.
    limiters[0].update(lambda estimate, _now: setattr(estimate, "limit", 1.0))
    assert scaler.provider() == "below cap"
    # The user's own cap (--concurrency) reached is a bound too: a helper would not add to it.
    limiters[0].set_ceiling(1)
    assert scaler.provider() == "at cap"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_the_half_of_a_ceiling_handed_to_a_helper_that_never_starts_comes_back(
        sessions, db_url):
    # The real handover and give-back of ``--workers auto`` with --concurrency 8: the helper
    # set aside for never started, so this process may keep all 8 in flight again.
    from grading.limiter import limiter_for
    from storage.jobs.helper_processes import auto_scaler
    from tests.jobs.helpers import make_dataset, make_rubric, make_run

    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 3)
    base = "http://127.0.0.1:11/v1"
    scaler = auto_scaler(db_url, sessions, [make_run(sessions, version.id, dataset.id, base).id])
    limiter = limiter_for("openai/fake-judge", base, 8)
    limiter.update(lambda estimate, _now: setattr(estimate, "limit", 8.0))

    handed = await scaler.handover()
    assert [(share, part) for _model, _base, share, _known, part in handed] == [(4.0, 0.5)]
    assert limiter.snapshot().own_ceiling == 4 and limiter.snapshot().limit == 4
    scaler.give_back(handed)
    assert limiter.snapshot().own_ceiling == 8 and limiter.snapshot().limit == 8


@pytest.mark.parametrize("alive", [True, False], ids=["helper-set-to-work", "helpers-died"])
async def test_a_share_handed_over_for_a_helper_that_never_starts_is_given_back(alive):
    # The standby helper died (and so did the one started in its place): the half of the
    # limit set aside for it comes back to this process, and nothing counts as joined.
    events: list = []

    async def handover():
        events.append("handover")
        return "half"

    scaler = autoscale.AutoScaler(
        spawn=lambda: "new helper", activate=lambda helper, handed: (
            events.append(("go", helper, handed)) or alive),
        dismiss=lambda helper: events.append(("dismiss", helper)),
        open_chunks=lambda: 10, handover=handover,
        give_back=lambda handed: events.append(("give back", handed)), max_helpers=1)
    scaler.spare = "standby helper"
    scaler._recent.extend([BUSY] * autoscale.SUSTAINED)

    assert await scaler.consider() is alive
    if alive:
        assert events == ["handover", ("go", "standby helper", "half")]
        assert scaler.helpers == ["standby helper"]
    else:
        assert events == ["handover", ("go", "standby helper", "half"),
                          ("go", "new helper", "half"), ("dismiss", "new helper"),
                          ("give back", "half")]
        assert scaler.helpers == []


def test_a_probe_refused_now_and_then_is_not_a_storm_that_keeps_helpers_away():
    # At a provider's cap the limiter sends a probe above it every few rounds for the whole
    # run, and most are refused: one refusal per sample is that, two or more a storm (the
    # opening slow start overshooting, the capacity falling).
    storm = autoscale.STORM_REFUSALS
    per_sample = [0, 1, 1, 0, storm, storm + 3]
    totals = iter([sum(per_sample[:i + 1]) for i in range(len(per_sample))])
    scaler = autoscale.AutoScaler(spawn=lambda: None, activate=lambda helper, handed: True,
                                  dismiss=lambda helper: None, open_chunks=lambda: 10,
                                  refusals=lambda: next(totals), max_helpers=1,
                                  meter=MachineMeter())
    storms = [scaler.sample().refused for _ in per_sample]
    assert storms == [False, False, False, False, True, True]
