"""Capacity discovery with a fake clock: a simulated provider with a concurrency cap (429
beyond it), a latency, optionally a latency that rises with load, drives the estimate."""

from __future__ import annotations

import pytest

from grading.capacity import (
    FIRST_PROBE_ROUNDS,
    INITIAL_LIMIT,
    MAX_OPENING,
    MAX_PAUSE,
    MAX_STEP,
    QUICK_RAISE_ANSWERS,
    RAISE_ANSWERS,
    STEP_WORK,
    Call,
    CapacityEstimate,
)
from tests.grading.capacity_simulation import HELD, Simulation, cap_of, flat


def test_starts_low_and_ramps_up_exponentially_while_calls_succeed():
    estimate = CapacityEstimate()
    assert estimate.slots == INITIAL_LIMIT
    sim = Simulation(estimate, cap_of(None), flat(0.2)).run(until=2.0)
    # Each round of ~220 ms the limit doubles (4, 8, 16, 32), then grows by MAX_STEP a round.
    assert sim.limit_at(0.5) >= 8
    assert sim.limit_at(1.0) >= 32
    assert sim.limit_at(2.0) >= 32 + 2 * MAX_STEP
    assert sim.refused == 0


@pytest.mark.parametrize("refusal_latency", [pytest.param(0.002, id="fast-429"),
                                             pytest.param(HELD, id="held-429")])
@pytest.mark.parametrize("cap", [pytest.param(8, id="cap-8"), pytest.param(32, id="cap-32"),
                                 pytest.param(128, id="cap-128")])
def test_settles_at_the_providers_cap_with_rare_refusals(cap, refusal_latency):
    sim = Simulation(CapacityEstimate(), cap_of(cap), flat(0.2),
                     refusal_latency=refusal_latency).run(until=60.0)
    # At the cap for the whole second half, never above it but for the probe.
    assert cap - 0.5 <= sim.average_limit(30.0, 60.0) <= cap
    assert max(limit for at, limit in sim.timeline if at > 10) <= cap
    # 429s stay rare: the slow-start overshoot, then one refused probe every few dozen rounds.
    assert sim.refused_share <= 0.01, (sim.refused, sim.calls)
    # Throughput within 5% of a client that knew the cap from the start (mean latency 0.22).
    assert sim.successes >= 0.95 * cap * 60.0 / 0.22


def test_slow_start_ends_at_the_level_below_the_lowest_refused_one():
    sim = Simulation(CapacityEstimate(), cap_of(20), flat(0.2), refusal_latency=HELD)
    sim.run(until=2.0)
    estimate = sim.estimate
    assert not estimate.slow_start and estimate.refused_at == 21
    # Not a fraction of the overshoot: the level where calls were answered.
    assert estimate.limit == 20 and estimate.decreases == 0
    # Only the calls of the last wave (16 to 32) above the cap were refused, not a round's
    # worth of every call sent until the first 429 came back.
    assert sim.refused <= 32 - 20


@pytest.mark.parametrize(("cap", "work", "latency", "slower"), [
    pytest.param(8, 1600, 0.2, 1.1, id="cap-8-1600-calls"),
    pytest.param(32, 1600, 0.2, 1.1, id="cap-32-1600-calls"),
    # Ten rounds of ramping up (16 more calls a round past 32) in a run of 12 rounds.
    pytest.param(128, 1600, 0.2, 1.6, id="cap-128-1600-calls"),
    pytest.param(6, 240, 0.05, 1.1, id="cap-6-240-calls"),
])
def test_a_finite_run_is_refused_on_at_most_2_percent_of_its_calls(cap, work, latency,
                                                                     slower):
    # The benchmark's provider: refused calls are held as long as answered ones and count as
    # in flight meanwhile, so each call sent above the cap poisons a slot for a whole round;
    # refused calls are made again after a short backoff.
    sim = Simulation(CapacityEstimate(), cap_of(cap), flat(latency), refusal_latency=HELD,
                     work=work).run()
    assert sim.finished()
    assert sim.refused_share <= 0.02, (sim.refused, sim.calls)
    knew_the_cap = work / cap * latency * 1.1  # mean latency with the jitter
    assert sim.now <= slower * knew_the_cap, (sim.now, knew_the_cap)


# litellm's CPU per call as measured here (ms to send a call, ms to take its answer): at a
# cap of 128 and 200 ms one core is the bound from ~55 calls in flight.
CPU_PER_CALL = {"launch_cpu": 0.0022, "answer_cpu": 0.0016}


def test_a_client_bound_by_its_own_cpu_keeps_its_limit_and_loses_only_the_ramp():
    # Latency rises in our own event loop once the core is full: not the provider queueing,
    # so no delay-signal cut (without ``own_cpu`` the limit fell from 128 to 64 twice).
    knew = CapacityEstimate()
    knew.seed(128.0)
    reference = Simulation(knew, cap_of(128), flat(0.2), refusal_latency=HELD, work=1600,
                           **CPU_PER_CALL).run()
    sim = Simulation(CapacityEstimate(), cap_of(128), flat(0.2), refusal_latency=HELD,
                     work=1600, **CPU_PER_CALL).run()
    assert sim.finished() and reference.finished()
    assert sim.estimate.decreases == 0 and sim.refused == 0
    # What is lost is the slow start from 4 (CPU idle while fewer calls are in flight than
    # the core could serve), about a second here: the benchmark's library row at cap 128.
    assert reference.now < sim.now <= reference.now + 1.2, (sim.now, reference.now)


def test_work_waiting_before_the_first_answer_widens_the_opening():
    estimate = CapacityEstimate()
    estimate.expect(250)  # two calls of opening for it: no less than INITIAL_LIMIT
    assert estimate.limit == INITIAL_LIMIT
    estimate.expect(1000)
    assert estimate.limit == 10
    estimate.expect(100_000)
    assert estimate.limit == MAX_OPENING
    estimate.expect(500)  # never lowers it
    assert estimate.limit == MAX_OPENING

    halves = CapacityEstimate()
    halves.set_part(0.5)  # one of two processes splitting the work
    halves.expect(1600)
    assert halves.limit == MAX_OPENING / 2

    capped = CapacityEstimate(ceiling=6)
    capped.expect(1600)
    assert capped.limit == 6  # the user's ceiling holds

    resumed = CapacityEstimate()
    resumed.resume(40.0)  # the last process's level is the better guide
    resumed.expect(1600)
    assert resumed.limit == 20

    answered = CapacityEstimate()
    answered.succeeded(answered.start(0.0), 0.2)
    before = answered.limit
    answered.expect(1600)  # too late: slow start has begun
    assert answered.limit == before


def test_the_step_of_a_round_grows_with_the_work_still_to_make():
    unknown = CapacityEstimate()
    assert unknown.max_step == MAX_STEP
    small = CapacityEstimate()
    small.expect(1600)  # 16 calls of overshoot are 1% of it already
    assert small.max_step == MAX_STEP
    large = CapacityEstimate()
    large.expect(16_000)
    assert large.max_step == 16_000 // STEP_WORK
    for _ in range(8_000):
        large.succeeded(large.start(0.0), 0.2)
    assert large.max_step == 8_000 // STEP_WORK  # half the work is done
    large.expect(1_000_000)  # after the first answer it is no longer taken as the work
    assert large.max_step == 8_000 // STEP_WORK
    half = CapacityEstimate()
    half.set_part(0.5)  # one of two processes splitting the run: half of the step
    half.expect(16_000)
    assert half.max_step == 16_000 // STEP_WORK // 2


@pytest.mark.parametrize("cap", [8, 32, 128, 512])
def test_a_long_run_at_a_high_cap_ramps_up_in_a_few_rounds_with_rare_refusals(cap):
    # A hosted judge (2 s a call) and 16,000 calls: growing by 16 a round, the ramp to a cap
    # of 512 took 16 rounds past 16, more than half as long as the whole run at the cap.
    def run(estimate: CapacityEstimate) -> Simulation:
        return Simulation(estimate, cap_of(cap), flat(2.0), refusal_latency=HELD,
                          work=16_000).run(until=10_000.0)

    knew = CapacityEstimate()
    knew.seed(float(cap))
    reference = run(knew)
    known = CapacityEstimate()
    known.expect(16_000)
    sim, by_max_step = run(known), run(CapacityEstimate())
    assert sim.finished() and by_max_step.finished() and reference.finished()
    # The overshoot of the round that crosses the cap, at most a step: 1% of the work.
    assert sim.refused_share <= 0.01, (sim.refused, sim.calls)
    assert sim.now <= 1.2 * reference.now, (sim.now, reference.now)
    assert sim.now <= by_max_step.now + 2.0  # never slower by as much as a round
    if cap == 512:  # what the work-scaled step saves
        assert by_max_step.now >= 1.3 * sim.now, (by_max_step.now, sim.now)


@pytest.mark.parametrize("cap", [6, 8, 32, 128])
def test_a_long_run_opens_wider_and_stays_rarely_refused_at_any_cap(cap):
    # 1,600 calls waiting open at 16: at a cap of 128 (our CPU the bound from ~55 in flight)
    # one to two rounds of slow start fewer, the benchmark's library row within 1.1x of a
    # client that knew the cap; at small caps the opening's overshoot is at most 16 calls.
    knew = CapacityEstimate()
    knew.seed(float(cap))
    reference = Simulation(knew, cap_of(cap), flat(0.2), refusal_latency=HELD, work=1600,
                           **CPU_PER_CALL).run()
    estimate = CapacityEstimate()
    estimate.expect(1600)
    sim = Simulation(estimate, cap_of(cap), flat(0.2), refusal_latency=HELD, work=1600,
                     **CPU_PER_CALL).run()
    assert sim.finished()
    assert sim.refused_share <= 0.02, (sim.refused, sim.calls)
    assert sim.now <= 1.1 * reference.now, (sim.now, reference.now)


@pytest.mark.parametrize("cap", [pytest.param(8, id="cap-8"), pytest.param(32, id="cap-32")])
def test_rare_refusals_when_our_count_of_calls_in_flight_runs_ahead_of_the_providers(cap):
    # Answers wait up to 40 ms for our event loop: the provider has freed a slot we still
    # count, so a probe may be answered at a level the provider would refuse a moment later.
    sim = Simulation(CapacityEstimate(), cap_of(cap), flat(0.2), refusal_latency=HELD,
                     client_lag=0.04, work=1600).run()
    assert sim.finished()
    assert sim.refused_share <= 0.02, (sim.refused, sim.calls)
    assert sim.now <= 1.15 * 1600 / cap * 0.24, sim.now  # 0.24: mean latency with the lag


@pytest.mark.parametrize("send_lag", [pytest.param(0.02, id="20ms"),
                                      pytest.param(0.05, id="50ms")])
@pytest.mark.parametrize("cap", [pytest.param(8, id="cap-8"), pytest.param(32, id="cap-32")])
def test_rare_refusals_and_the_whole_cap_used_when_requests_reach_the_provider_out_of_order(
        cap, send_lag):
    # Requests wait up to 20-50 ms to be sent, so they reach the provider in another order
    # than they started: a probe above the cap may arrive first and be answered, and a call
    # the limit allowed is refused in its place. Measured before the probe took the blame and
    # before the probe interval stopped shrinking with every lucky answer: 1.3-2.5% refused,
    # and at a cap of 8 the limit sat at 7.2-7.7 (0.81-0.86 of the cap's throughput).
    sim = Simulation(CapacityEstimate(), cap_of(cap), flat(0.2), refusal_latency=HELD,
                     send_lag=send_lag).run(until=120.0)
    assert sim.refused_share <= 0.015, (sim.refused, sim.calls)
    mean_latency = 0.22 + send_lag / 2  # with the jitter and the send lag
    assert sim.successes >= 0.95 * cap * 120.0 / mean_latency, sim.successes
    assert sim.average_limit(60.0, 120.0) >= cap - 0.6


def test_a_call_refused_beside_a_probe_is_the_probes_429_not_a_fall_in_capacity():
    estimate = CapacityEstimate()
    estimate.limit, estimate.slow_start, estimate.refused_at = 8.0, False, 9.0
    estimate._rounds_to_probe = 0.0  # the next probe is due
    calls = [estimate.start(0.0) for _ in range(8)]
    estimate.succeeded(calls.pop(0), 0.2)  # the wave is armed when the limit is full
    calls.append(estimate.start(0.2))
    probe = estimate.start(0.2)
    assert probe.probe and probe.level == 9
    before = estimate.probe_rounds
    # The probe reached the provider before a call that started with it, was answered, and
    # the call was refused in its place.
    estimate.succeeded(probe, 0.4)
    estimate.refused(calls[-1], 0.41)
    assert estimate.limit == 8 and estimate.decreases == 0
    assert estimate.refused_at == 9 and estimate.probe_rounds == 2 * before
    # A second call of that moment: the same 429, not counted again.
    estimate.refused(calls[0], 0.42)
    assert estimate.limit == 8 and estimate.probe_rounds == 2 * before
    # A call started after the probe was answered and refused: the capacity fell.
    later = estimate.start(0.5)
    estimate.refused(later, 0.7)
    assert estimate.limit < 8 and estimate.decreases == 1


def test_another_429_at_the_limit_after_the_probes_answer_lowers_the_limit_it_left():
    # The probe's answer was luck (it reached the provider after others ended): a second call
    # at the limit refused beside it, after its answer, shows that the level the probe left
    # is refused too. Learned at once (not a cut: the same round's signal), instead of every
    # call at that level being refused and blamed on the probe until a later one is refused.
    estimate = CapacityEstimate()
    estimate.limit, estimate.slow_start, estimate.refused_at = 8.0, False, 9.0
    estimate._rounds_to_probe = 0.0  # the next probe is due
    calls = [estimate.start(0.0) for _ in range(8)]  # levels 1-8
    estimate.succeeded(calls.pop(0), 0.2)
    calls.append(estimate.start(0.2))  # level 8
    probe = estimate.start(0.2)
    assert probe.probe and probe.level == 9 and not estimate.can_start(0.2)
    estimate.succeeded(probe, 0.4)
    estimate.refused(calls[-1], 0.41)  # the probe's 429, blamed: the limit stays
    assert estimate.limit == 8 and estimate.decreases == 0
    estimate.refused(calls[-2], 0.42)  # a second one at level 8: two over a cap of 7
    assert estimate.limit == 7 and estimate.refused_at == 8 and estimate.decreases == 0
    estimate.refused(calls[0], 0.43)  # started at level 2, sent late: says nothing
    assert estimate.limit == 7 and estimate.decreases == 0


@pytest.mark.parametrize(("send_lag", "most"), [(0.02, 0.032), (0.04, 0.018)])
def test_requests_sent_late_cost_few_refusals_at_a_cap_of_32(send_lag, most):
    # A busy event loop sends a burst's requests up to 20-40 ms after they start: probes
    # are answered by luck and leave the limit above the cap. Measured before the rule
    # above: 3.96% and 2.18% of calls refused (the benchmark's cap-32 rows: 2.1-3.0%).
    refused = calls = 0
    for latency in (0.19, 0.2, 0.21):
        estimate = CapacityEstimate()
        estimate.expect(1600)
        sim = Simulation(estimate, cap_of(32), flat(latency), refusal_latency=HELD, work=1600,
                         send_lag=send_lag).run()
        refused, calls = refused + sim.refused, calls + sim.calls
    assert refused / calls <= most, refused / calls


def test_a_refused_probe_costs_one_429_and_the_next_probe_waits_longer():
    estimate = CapacityEstimate()
    estimate.limit, estimate.slow_start, estimate.refused_at = 8.0, False, 9.0
    calls = [estimate.start(0.0) for _ in range(8)]
    assert not any(call.probe for call in calls) and estimate.slots == 8
    now, rounds = 0.0, 0
    while estimate.slots == 8:  # a saturated client: every answered call is replaced
        now += 0.025
        estimate.succeeded(calls.pop(0), now)
        calls.append(estimate.start(now))
        rounds += 1
    assert rounds / 8 == pytest.approx(estimate.probe_rounds, abs=1)
    probe = estimate.start(now)
    assert probe.probe and probe.level == 9
    # While the probe is out it borrows a slot: an answered call is not replaced, so a
    # provider that counts the refused probe as in flight refuses nothing else.
    estimate.succeeded(calls.pop(0), now + 0.01)
    assert not estimate.can_start(now + 0.01)
    before = estimate.probe_rounds
    estimate.refused(probe, now + 0.2)
    assert estimate.limit == 8 and estimate.probe_rounds == 2 * before
    assert estimate.decreases == 0 and estimate.refusals == 1
    assert estimate.can_start(now + 0.2) and estimate.slots == 8


def test_an_answered_probe_raises_the_limit_and_two_mean_the_capacity_grew():
    estimate = CapacityEstimate()
    estimate.limit, estimate.slow_start, estimate.refused_at = 8.0, False, 9.0
    sim = Simulation(estimate, lambda now: 8 if now < 5 else 40, flat(0.2)).run(until=30.0)
    assert sim.limit_at(4.9) == 8
    assert estimate.refused_at == 41 and sim.limit_at(30.0) == 40


def test_a_429_backs_off_once_per_round_not_once_per_refused_call():
    estimate = CapacityEstimate()
    estimate.limit, estimate.slow_start = 40.0, False
    for _ in range(10):  # ten 429s from calls of the same round, all started at t=0
        estimate.refused(Call(started=0.0, level=40), now=0.5)
    assert estimate.limit == pytest.approx(36.0)
    assert estimate.decreases == 1 and estimate.refusals == 10
    # A call started after the decrease: a new round.
    estimate.refused(Call(started=0.6, level=36), now=0.8)
    assert estimate.limit == pytest.approx(32.4)


def test_a_refusal_in_the_same_round_still_teaches_its_level():
    estimate = CapacityEstimate()
    estimate.limit, estimate.slow_start = 40.0, False
    estimate.refused(Call(started=0.0, level=40), now=0.5)
    estimate.refused(Call(started=0.1, level=21), now=0.5)  # the provider refused 21 of ours
    assert estimate.limit == 20 and estimate.decreases == 1


def test_retry_after_pauses_new_calls_and_is_capped():
    estimate = CapacityEstimate()
    estimate.refused(estimate.start(0.0), now=1.0, retry_after=5.0)
    assert estimate.paused_until == pytest.approx(6.0)
    assert not estimate.can_start(5.9) and estimate.can_start(6.0)
    # A provider saying "come back in an hour" is capped.
    estimate.refused(Call(started=2.0, level=1), now=2.0, retry_after=3600.0)
    assert estimate.paused_until == pytest.approx(2.0 + MAX_PAUSE)


def test_retry_after_is_honoured_by_the_simulated_client():
    refusals_until = 1.0
    sim = Simulation(CapacityEstimate(), lambda now: 0 if now < refusals_until else None,
                     flat(0.05), retry_after=2.0).run(until=6.0)
    # Every call of the first burst was refused; then nothing was sent for 2 s.
    first_after = [at for at, _limit in sim.timeline if at > 0.01]
    assert sim.refused <= INITIAL_LIMIT
    assert first_after and sim.estimate.paused_until >= 2.0
    assert sim.successes > 0


def test_rising_latency_backs_off_before_any_429():
    # A server that queues beyond 20 in flight: latency grows with the queue, never a 429.
    def queueing(_now: float, in_flight: int) -> float:
        return 0.1 * max(1.0, in_flight / 20)

    sim = Simulation(CapacityEstimate(), cap_of(None), queueing).run(until=60.0)
    assert sim.refused == 0
    assert sim.estimate.decreases >= 1
    # It holds the limit near the knee instead of queueing hundreds of calls.
    assert sim.average_limit(30.0, 60.0) <= 45, sim.average_limit(30.0, 60.0)
    assert sim.average_limit(30.0, 60.0) >= 15


def test_a_client_bound_by_its_own_cpu_keeps_enough_calls_in_flight():
    # 20 ms of our CPU per call: at most 50 calls/s whatever the limit; past 11 in flight the
    # calls only queue in our own event loop, and latency rises with them.
    def cpu_bound(_now: float, in_flight: int) -> float:
        return max(0.22, in_flight * 0.02)

    sim = Simulation(CapacityEstimate(), cap_of(None), cpu_bound).run(until=60.0)
    most = 60.0 / (0.02 * 1.1)  # 1.1: the mean jitter
    assert sim.successes >= 0.95 * most, (sim.successes, most)
    # Latency backs it off from queueing hundreds, but never below what keeps the CPU busy.
    assert 11 <= sim.average_limit(30.0, 60.0) <= 40, sim.average_limit(30.0, 60.0)
    assert min(limit for at, limit in sim.timeline if at > 10) >= 11


@pytest.mark.parametrize("refusal_latency", [pytest.param(0.002, id="fast-429"),
                                             pytest.param(HELD, id="held-429")])
def test_adapts_when_the_capacity_changes_mid_run(refusal_latency):
    def cap(now: float) -> int:
        return 32 if now < 30 else (8 if now < 60 else 64)

    sim = Simulation(CapacityEstimate(), cap, flat(0.2),
                     refusal_latency=refusal_latency).run(until=100.0)
    assert 28 <= sim.average_limit(20.0, 30.0) <= 32
    assert 7 <= sim.average_limit(40.0, 60.0) <= 8  # the provider cut capacity: down fast
    assert sim.average_limit(85.0, 100.0) >= 0.9 * 64  # it raised it: found again
    assert sim.refused_share <= 0.02


def test_a_user_ceiling_caps_the_discovery():
    sim = Simulation(CapacityEstimate(ceiling=10), cap_of(None), flat(0.1)).run(until=10.0)
    assert max(limit for _at, limit in sim.timeline) <= 10
    assert sim.limit_at(10.0) == 10
    assert sim.estimate.slots == 10  # no probe beyond a user's ceiling either


def test_an_idle_limit_does_not_grow():
    estimate = CapacityEstimate()
    for i in range(200):  # one call at a time, limit 4: it is not what holds calls back
        estimate.succeeded(estimate.start(i * 0.1), now=i * 0.1 + 0.05)
    assert estimate.limit == INITIAL_LIMIT and estimate.slots == INITIAL_LIMIT


def test_a_peer_refusal_backs_off_once_per_round():
    estimate = CapacityEstimate()
    estimate.limit, estimate.slow_start = 20.0, False
    estimate.peer_refused(now=10.0, round_time=0.2)
    estimate.peer_refused(now=10.1, round_time=0.2)  # same round
    assert estimate.limit == pytest.approx(18.0) and estimate.decreases == 1


def test_two_processes_on_one_provider_split_its_capacity_with_rare_refusals():
    refused = {}
    for share in (True, False):
        a, b = CapacityEstimate(), CapacityEstimate()
        sim = Simulation(a, cap_of(32), flat(0.2), refusal_latency=HELD, peers=[b],
                         share_refusals=share).run(until=60.0)
        # Together they use what the provider allows.
        assert 28 <= a.limit + b.limit <= 32
        assert sim.successes >= 0.85 * 32 * 60.0 / 0.22
        refused[share] = sim.refused_share
    # With each one's refusals backing the other off, 429s stay rare. Alone, each sees the
    # other's calls refused beside its own probes: those 429s are blamed on the probe, which
    # then waits longer, so they stay as rare (before that rule: about twice as many).
    assert refused[True] <= 0.01, refused
    assert refused[False] <= 0.01, refused


def test_processes_that_split_one_command_open_and_grow_together_as_one_would():
    # grade --workers 2: each process has half of the command's part, so together they open
    # at one process's limit and grow by one process's step per round (before: each its
    # own, twice the overshoot into the provider's cap).
    one, a, b = CapacityEstimate(), CapacityEstimate(), CapacityEstimate()
    a.set_part(0.5)
    b.set_part(0.5)
    assert a.limit + b.limit == one.limit == INITIAL_LIMIT
    assert a.max_step + b.max_step == one.max_step == MAX_STEP
    # Once calls were made the limit is what was learned: a later part leaves it.
    used = CapacityEstimate()
    used.succeeded(used.start(0.0), 0.1)
    used.set_part(0.5)
    assert used.limit == INITIAL_LIMIT
    # The first second at a provider taking 32: one process doubles up to 32 unrefused; two
    # halves get there together as unrefused; two whole processes overshoot into the cap.
    alone = CapacityEstimate()
    by_one = Simulation(alone, cap_of(32), flat(0.2), refusal_latency=HELD).run(until=1.0)
    assert (by_one.refused, alone.limit) == (0, 32)
    held, refused = {}, {}
    for part in (0.5, 1.0):
        a, b = CapacityEstimate(), CapacityEstimate()
        a.set_part(part)
        b.set_part(part)
        sim = Simulation(a, cap_of(32), flat(0.2), refusal_latency=HELD, peers=[b],
                         share_refusals=True).run(until=1.0)
        held[part], refused[part] = a.limit + b.limit, sim.refused
    assert (refused[0.5], held[0.5]) == (0, 32)
    assert refused[1.0] >= 16, refused


def test_seeding_skips_slow_start_only_before_any_call():
    estimate = CapacityEstimate(ceiling=50)
    estimate.seed(80.0)
    assert estimate.limit == 50 and not estimate.slow_start
    used = CapacityEstimate()
    used.succeeded(used.start(0.0), 0.1)
    used.seed(80.0)
    assert used.limit < 80


def test_a_refusal_of_the_opening_calls_is_a_decrease_the_statistics_show():
    # The first calls go out as a wave of INITIAL_LIMIT probes; a provider that takes fewer
    # refuses the last one: the limit falls below where it started, and the figures say so.
    estimate = CapacityEstimate()
    calls = [estimate.start(0.0) for _ in range(INITIAL_LIMIT)]
    estimate.refused(calls[-1], now=0.1)
    assert estimate.limit == INITIAL_LIMIT - 1
    assert estimate.decreases == 1 and estimate.lowest_limit == INITIAL_LIMIT - 1


def _full_rounds(estimate: CapacityEstimate, start: float, rounds: int,
                 latency: float) -> float:
    """``rounds`` rounds of calls filling every slot, each answered after ``latency``."""
    now = start
    for _ in range(rounds):
        calls = [estimate.start(now) for _ in range(estimate.slots - estimate.in_flight)]
        now += latency
        for call in calls:
            estimate.succeeded(call, now)
    return now


@pytest.mark.parametrize("busy", [False, True], ids=["not-told", "told-busy"])
def test_latency_measured_while_our_own_process_is_busy_neither_cuts_nor_grows(busy):
    # Calls answered in 0.2 s, then three times slower while our own process is busy for
    # most of a core: the rise is in our event loop, not at the provider. A cut would
    # leave the CPU idle between calls; growth would only queue more calls in our loop.
    estimate = CapacityEstimate(64)
    now = _full_rounds(estimate, 0.0, 12, 0.2)
    assert estimate.limit == 64 and estimate.decreases == 0
    estimate.own_cpu(busy)
    estimate.set_ceiling(None)  # room to grow, were it allowed
    _full_rounds(estimate, now, 12, 0.6)
    if busy:
        assert (estimate.limit, estimate.decreases) == (64, 0)
        assert estimate.snapshot().cpu_bound
    else:  # the same latencies from a process that is not busy: the provider queues
        assert estimate.decreases >= 1 and estimate.limit < 64


def test_latency_measured_while_busy_is_forgotten_when_the_process_is_free_again():
    estimate = CapacityEstimate(64)
    now = _full_rounds(estimate, 0.0, 12, 0.2)
    estimate.own_cpu(True)
    now = _full_rounds(estimate, now, 6, 0.6)
    estimate.own_cpu(False)
    assert estimate.short_latency is None  # the busy latencies were our own queue
    now = _full_rounds(estimate, now, 6, 0.2)
    assert estimate.decreases == 0 and estimate.limit >= 64


@pytest.mark.parametrize("handed_over", [True, False], ids=["share-handed-over", "slow-start"])
def test_a_process_joining_at_the_cap_takes_half_of_the_limit_and_adds_no_storm(handed_over):
    # One process found the provider's cap of 32; after 30 s a second joins (grade --workers
    # auto adds a helper when the first is CPU-bound). Handed half of the first one's limit,
    # the two keep 32 in flight between them from the first round.
    first, second = CapacityEstimate(), CapacityEstimate()
    learned: list[float] = []

    def join() -> None:
        assert first.refused_at is not None and 30 <= first.limit <= 32
        learned.append(first.limit)
        if handed_over:
            share, known, part = first.give_share()
            second.take_share(share, known, part)
            assert known and first.limit + second.limit == pytest.approx(learned[0])
            assert not second.slow_start and second.refused_at == second.limit + 1

    # The process handing over waits until its own calls are within what it kept before it
    # says go (storage.jobs.commands: the helper's calls then replace its own).
    sim = Simulation(first, cap_of(32), flat(0.2), refusal_latency=HELD, peers=[second],
                     share_refusals=True, join_at=30.0, on_join=join,
                     peers_ready=lambda: first.in_flight <= first.base_slots)
    sim.run(until=30.0)
    refused_alone, answered_alone = sim.refused, sim.successes
    sim.run(until=40.0)
    assert learned  # the second did join
    refused = sim.refused - refused_alone
    if handed_over:
        assert refused <= 4, refused  # rare probes above each share
        assert sim.successes - answered_alone >= 0.9 * 32 * 10.0 / 0.22
        assert 28 <= first.limit + second.limit <= 33
    else:  # the slow start of the newcomer runs into the first one's calls
        assert refused > 4, refused


def test_a_share_handed_over_before_the_cap_is_known_keeps_discovering():
    first = CapacityEstimate()
    first.limit = 20.0  # still in slow start: no refusal yet
    share, known, part = first.give_share()
    second = CapacityEstimate()
    second.take_share(share, known, part)
    assert (first.limit, second.limit, known) == (10.0, 10.0, False)
    assert first.slow_start and second.slow_start and second.refused_at is None


def test_a_users_ceiling_is_split_with_the_share_and_comes_back_with_it():
    # --concurrency 10 with a helper: the two processes keep at most 10 in flight together,
    # even once each climbs as high as it may, and a later set_ceiling (the helper's runner
    # reading the run's --concurrency) keeps the split.
    first = CapacityEstimate(10)
    first.limit = 10.0
    share, known, part = first.give_share()
    second = CapacityEstimate()
    second.take_share(share, known, part)
    second.set_ceiling(10)
    assert (first.max_limit, second.max_limit) == (5, 5)
    for estimate in (first, second):
        estimate.limit = 1000.0
        estimate.set_ceiling(10)
    assert first.limit + second.limit == 10
    assert first.snapshot().own_ceiling == second.snapshot().own_ceiling == 5
    first.take_share(first.limit + share, known, first.part + part)  # the helper is gone
    assert first.max_limit == 10 and first.snapshot().ceiling == 10
    # Without a ceiling the part changes nothing; a part of a small ceiling is one call.
    assert CapacityEstimate().max_limit == CapacityEstimate(None).max_limit
    tiny = CapacityEstimate(1)
    tiny.set_part(0.5)
    assert tiny.max_limit == 1
    with pytest.raises(ValueError):
        tiny.set_part(0.0)


def test_a_call_the_limit_allowed_refused_in_slow_start_goes_back_to_where_the_last_wave_began():
    # Traced at a cap of 32 (benchmarks/grading_throughput.py --trace): the wave from 32 to
    # 48 was answered, as its answers waited for our event loop while the provider freed
    # their slots; the limit went to 48, and calls it allowed were refused. Cut by a tenth
    # (43), the next round went out at levels 34-44 and some 30 of its calls were refused.
    estimate = CapacityEstimate()
    estimate.succeeded(estimate.start(0.0), 0.2)  # the opening call
    estimate.limit = 32.0
    calls = [estimate.start(0.0) for _ in range(32)]
    estimate.succeeded(calls.pop(), 0.2)  # arms the next wave: 16 probes above the limit
    wave = [estimate.start(0.2) for _ in range(17)]
    for call in wave:
        estimate.succeeded(call, 0.4)
    assert estimate.limit == 48 and estimate.slow_start
    allowed = [estimate.start(0.5) for _ in range(17)]  # 31 still in flight
    assert [call.level for call in allowed if not call.probe] == list(range(32, 49))
    estimate.refused(allowed[-1], 0.7)  # level 48
    assert estimate.limit == 32 and not estimate.slow_start and estimate.refused_at == 48
    estimate.refused(allowed[8], 0.71)  # level 40, the same round's: no further cut
    assert estimate.limit == 32 and estimate.decreases == 1


def test_a_call_refused_in_a_probes_place_as_slow_start_crosses_the_cap_is_no_level():
    # Traced at a cap of 32 (the library, 1,600 calls): the wave from 32 to 48 went out just
    # after calls at levels 14-25; its probes reached the provider first, 33-37 answered by
    # luck, 38-48 refused, and so were the calls at 14-25, after them. Read as levels, they
    # cut the limit from 37 to 13, and the climb back took 8 s.
    estimate = CapacityEstimate()
    estimate.expect(1600)
    estimate.waiting = 1600  # the calls queued behind the slots
    now = _full_rounds(estimate, 0.0, 2, 0.2)  # 16, then 32 answered
    assert estimate.limit == 32 and estimate.slow_start and estimate.slots == 48
    calls = [estimate.start(now) for _ in range(48)]
    regular, wave = calls[:32], calls[32:]
    assert not any(call.probe for call in regular) and all(call.probe for call in wave)
    for call in wave[:5]:  # 33-37, luck
        estimate.succeeded(call, now + 0.2)
    assert estimate.limit == 37
    for call in wave[5:]:  # 38-48
        estimate.refused(call, now + 0.21)
    assert not estimate.slow_start and estimate.refused_at == 38
    for level in (14, 25):  # refused in the probes' place: the wave's answers were luck
        estimate.refused(regular[level - 1], now + 0.22)
        assert (estimate.limit, estimate.refused_at) == (32, 33)
    for call in regular[:13] + regular[14:24] + regular[25:]:
        estimate.succeeded(call, now + 0.23)
    assert (estimate.limit, estimate.refused_at, estimate.decreases) == (32, 33, 0)
    # A call sent after the crossing and refused at the limit is a level again: a tenth off.
    later = [estimate.start(now + 0.3) for _ in range(32)]
    estimate.refused(later[-1], now + 0.5)
    assert estimate.limit == pytest.approx(32 * 0.9) and estimate.refused_at == 32


def _fill(estimate: CapacityEstimate, now: float) -> list:
    """Start calls until every slot is taken."""
    calls = []
    while estimate.can_start(now):
        calls.append(estimate.start(now))
    return calls


def _lockstep_round(estimate: CapacityEstimate, now: float, cap: int) -> float:
    """Fill every slot, then end every call: answered up to ``cap``, refused above."""
    for call in _fill(estimate, now):
        if call.level > cap:
            estimate.refused(call, now + 0.2)
        else:
            estimate.succeeded(call, now + 0.2)
    return now + 0.25


def _slow_start_to(estimate: CapacityEstimate, cap: int) -> float:
    """Lockstep rounds until the first refusal ends slow start; the time then."""
    now = 0.0
    for _ in range(20):
        now = _lockstep_round(estimate, now, cap)
        if estimate.refused_at is not None:
            break
    return now


def _lucky_round(estimate: CapacityEstimate, now: float, cap: int,
                 answer=lambda probe: True) -> float:
    """As ``_lockstep_round``, but probes are answered as ``answer(probe)`` says: by default
    every one, as probes at a refused level were by luck in the benchmark (the provider had
    freed slots whose answers waited)."""
    for call in _fill(estimate, now):
        if answer(call) if call.probe else call.level <= cap:
            estimate.succeeded(call, now + 0.2)
        else:
            estimate.refused(call, now + 0.2)
    return now + 0.25


def _lucky_until_raised(estimate: CapacityEstimate, now: float, cap: int,
                        answer=lambda probe: True, rounds: int = 100) -> float:
    """Lucky rounds at the plateau until answered probes raise the limit above ``cap``."""
    for _ in range(rounds):
        now = _lucky_round(estimate, now, cap, answer)
        if estimate.limit > cap:
            break
    return now


class _Probes:
    """An ``answer`` for ``_lucky_round``: answers the n-th probe as ``rule(n)`` says, and
    counts the probes sent and the answered ones in a row."""

    def __init__(self, rule):
        self.rule, self.sent, self.in_a_row = rule, 0, 0

    def __call__(self, probe) -> bool:
        self.sent += 1
        answered = self.rule(self.sent)
        self.in_a_row = self.in_a_row + 1 if answered else 0
        return answered


@pytest.mark.parametrize("peer", [False, True], ids=["alone", "beside-a-peer"])
def test_alone_a_raise_above_a_refused_level_takes_several_answered_probes_in_a_row(peer):
    # Traced at a cap of 32 (the benchmark, 1,600 calls): a single probe at 33 was refused
    # about one time in five, so two in a row were answered more often than not, and each
    # raise cost a round of refusals at 33 (5-15) before the first came back. Several in a
    # row are rarely luck: A/B, 6 runs each, 17.7 refusals a run against 23.8 (the library),
    # 19.0 against 24.2 (the runner). Beside a peer, two still raise: its calls take what a
    # raise found free, and a slow raise would leave the peer's freed slots idle.
    estimate = CapacityEstimate()
    now = _slow_start_to(estimate, 32)
    if peer:
        estimate.peer_refused(now, round_time=0.2)
    probes = _Probes(lambda n: True)
    _lucky_until_raised(estimate, now, 32, probes, rounds=300)
    assert estimate.limit == 33
    assert probes.in_a_row == (QUICK_RAISE_ANSWERS if peer else RAISE_ANSWERS)

    # One probe in four refused: alone, the answers between never add up to a raise.
    estimate = CapacityEstimate()
    now = _slow_start_to(estimate, 32)
    if peer:
        estimate.peer_refused(now, round_time=0.2)
    probes = _Probes(lambda n: n % 4 != 0)
    _lucky_until_raised(estimate, now, 32, probes, rounds=300)
    if peer:
        assert estimate.limit == 33
    else:
        assert estimate.limit <= 32 and probes.sent >= 8, probes.sent


@pytest.mark.parametrize("peer", [False, True], ids=["alone", "beside-a-peer"])
def test_a_raise_on_lucky_probes_refused_goes_back_without_a_cut(peer):
    # Traced at a cap of 32: every probe at 33 was answered; two raised the limit to 33,
    # calls at 33 were refused, the limit was cut by a tenth, and answered probes had
    # shortened the interval: a raise came back within a second, three in all.
    estimate = CapacityEstimate()
    now = _slow_start_to(estimate, 32)
    assert (estimate.limit, estimate.refused_at) == (32, 33)
    if peer:  # another process on the endpoint was refused lately: its calls, not luck
        estimate.peer_refused(now, round_time=0.2)
    now = _lucky_until_raised(estimate, now, 32)  # the plateau: probes at 33, luck
    assert estimate.limit == 33 and now < 30.0
    interval, decreases = estimate.probe_rounds, estimate.decreases
    now = _lucky_round(estimate, now, 32)  # calls at 33 refused
    if peer:
        assert estimate.limit <= 33 * 0.9 and estimate.decreases > decreases
        return
    assert (estimate.limit, estimate.refused_at, estimate.decreases) == (32, 33, decreases)
    assert estimate.probe_rounds > interval and estimate.probe_rounds >= 2 * FIRST_PROBE_ROUNDS
    rounds = 0
    while estimate.limit <= 32 and rounds < 200:  # the next raise waits for longer
        now, rounds = _lucky_round(estimate, now, 32), rounds + 1
    assert rounds >= estimate.probe_rounds // 2


def test_a_raise_refused_while_a_probe_is_out_above_it_was_luck_too():
    # Traced at a cap of 32: the raise to 33 held for a round and a probe went out at 34;
    # the 17 calls refused at 33 beside it were all blamed on that probe, and the limit
    # stayed at 33 until the probe was answered (by luck as well).
    estimate = CapacityEstimate()
    now = _lucky_until_raised(estimate, _slow_start_to(estimate, 32), 32)
    assert estimate.limit == 33
    rounds = 0
    while not estimate.snapshot().probing and rounds < 6:
        now, rounds = _lucky_round(estimate, now, 33), rounds + 1
    calls = _fill(estimate, now)
    probes = [call for call in calls if call.probe]
    assert [call.level for call in probes] == [34]
    for call in calls:
        if call.level == 33:
            estimate.refused(call, now + 0.2)
    assert (estimate.limit, estimate.refused_at) == (32, 33)
    for call in calls:
        if call.level != 33:
            estimate.succeeded(call, now + 0.21)
    assert estimate.limit == 32  # the probe's answer, sent above a raise given up, is no level


def test_a_climb_past_a_low_refusal_stops_below_a_level_refused_shortly_before():
    # Traced at a cap of 32: refused at 33 and 34, then once at 30 (calls reach the provider
    # in another order than they start); probes answered past 30 read as "the capacity
    # grew", and the climb resumed into the cap of 32: some 20 calls refused in a round.
    # What refused 30 s ago likely refuses again (CUBIC's W_max): the climb stops below it.
    estimate = CapacityEstimate()
    now = _slow_start_to(estimate, 32)
    assert estimate.refused_at == 33
    now = _lockstep_round(estimate, now, 32)
    now = _lockstep_round(estimate, now, 29)  # a dip: calls at 30-32 refused
    assert estimate.refused_at == 30 and estimate.limit < 30
    for _ in range(200):  # climbs back, probes past 30, answered: it grew
        now = _lockstep_round(estimate, now, 32)
        if estimate.refused_at != 30:
            break
    assert estimate.refused_at == 33 and estimate.limit <= 32
    refused = estimate.refusals
    for _ in range(40):
        now = _lockstep_round(estimate, now, 32)
    assert estimate.limit <= 32 and estimate.refusals - refused <= 2


def test_the_opening_round_takes_as_many_calls_as_the_provider_answered_at_once():
    # 16 calls go out before any answer; the provider takes 8. Sent one after another by a
    # busy event loop, they reach it out of order: the refused ones include level 5.
    estimate = CapacityEstimate()
    estimate.expect(1600)
    calls = [estimate.start(0.0) for _ in range(16)]
    assert all(call.opening for call in calls) and not estimate.snapshot().opened
    refused_levels = {5, 7, 9, 11, 12, 14, 15, 16}
    for i, call in enumerate(sorted(calls, key=lambda c: c.level in refused_levels)):
        if call.level in refused_levels:
            estimate.refused(call, now=0.2 + i * 0.001)
        else:
            estimate.succeeded(call, now=0.2 + i * 0.001)
    # By the levels refused alone the limit would be 4 (below level 5): it is the 8 the
    # provider answered at once, and slow start ends below level 9.
    assert estimate.snapshot().opened
    assert (estimate.limit, estimate.refused_at, estimate.slow_start) == (8.0, 9.0, False)


def test_an_opening_round_answered_in_full_leaves_slow_start_alone():
    estimate = CapacityEstimate()
    estimate.expect(1600)
    calls = [estimate.start(0.0) for _ in range(16)]
    for i, call in enumerate(calls):
        estimate.succeeded(call, now=0.2 + i * 0.001)
        assert estimate.snapshot().opened == (i == 15)
    assert estimate.slow_start and estimate.refused_at is None and estimate.limit == 16
    # An estimate that makes no opening round (a share handed over) is opened by its first
    # ended call.
    share = CapacityEstimate()
    share.take_share(6.0, True)
    share.succeeded(share.start(1.0), now=1.2)
    assert share.snapshot().opened


def test_a_limit_is_split_into_equal_shares_with_the_part_of_the_ceiling():
    estimate = CapacityEstimate(ceiling=30)
    estimate.limit, estimate.slow_start, estimate.refused_at = 9.0, False, 10.0
    shares = estimate.split(3)
    assert shares == [(3.0, True, pytest.approx(1 / 3)), (3.0, True, pytest.approx(1 / 3))]
    assert estimate.limit == 3.0 and estimate.refused_at == 4.0
    assert estimate.own_ceiling == 10
    # Each share is at least one call, and halves keep what give_share always kept.
    small = CapacityEstimate()
    small.limit = 2.0
    assert [share for share, _known, _part in small.split(3)] == [1.0, 1.0]
    odd = CapacityEstimate()
    odd.limit = 9.5
    assert odd.give_share()[0] == 5.5 and odd.limit == 4.0
    with pytest.raises(ValueError, match="two ways"):
        CapacityEstimate().split(1)


def test_under_ten_calls_a_peers_refusal_stops_the_limit_without_cutting_it():
    # grade --workers 2 at a cap of 8: each process holds 4. One is refused and cuts its
    # own limit to 3; the other stays at 4 (a tenth of 4 is less than a call) and only
    # probes above it from now on. Together: 7, below the level refused, not 6.
    estimate = CapacityEstimate()
    estimate.limit, estimate.slow_start = 4.0, True
    estimate.peer_refused(now=10.0, round_time=0.2)
    assert estimate.limit == 4.0 and not estimate.slow_start and estimate.refused_at == 5.0
    assert estimate.decreases == 0
    # A refused level known above is brought down to where the limit stops.
    climbing = CapacityEstimate()
    climbing.limit, climbing.slow_start, climbing.refused_at = 5.0, False, 9.0
    climbing.peer_refused(now=10.0, round_time=0.2)
    assert (climbing.limit, climbing.refused_at) == (5.0, 6.0)


@pytest.mark.parametrize(("send_lag", "full", "most_refused"), [(0.0, 0.93, 0.01),
                                                                   (0.02, 0.8, 0.03)])
def test_two_processes_sharing_refusals_keep_a_cap_of_8_full(send_lag, full, most_refused):
    # Two shares of 4 (``split``, after one process's opening found the cap), each
    # learning the other's refusals, over a minute. Each cutting by a whole call for the
    # other's refusal (before), one starved: 91% and 74% of the slots used (1.40% refused
    # with requests sent up to 20 ms late); now 95% and 84% (2.4%).
    a, b = CapacityEstimate(), CapacityEstimate()
    a.limit, a.slow_start, a.refused_at = 8.0, False, 9.0
    share, known, part = a.split(2)[0]
    b.take_share(share, known, part)
    sim = Simulation(a, cap_of(8), flat(0.2), refusal_latency=HELD, peers=[b],
                     share_refusals=True, send_lag=send_lag).run(until=60.0)
    assert sim.successes >= full * 8 * 60.0 / 0.22, sim.successes
    assert sim.refused_share <= most_refused, sim.refused_share


def test_a_share_climbs_past_its_refused_level_only_as_far_as_the_whole_was_refused():
    # Traced, grade --workers 2 at a cap of 32: the grading process found the cap alone
    # (refused at 33-48), kept 16 and handed 16 over; two of its probes were answered at 17
    # (the helper was between chunks) and its climb stopped below the 33 refused before the
    # split, a level of the whole, not of its share: when the helper's calls came back, both
    # processes' calls were at 40 and 14 were refused in 0.3 s.
    estimate, now = CapacityEstimate(), 0.0
    while estimate.refused_at is None:  # slow start to the cap, alone
        now = _lockstep_round(estimate, now, 32)
    assert (estimate.limit, estimate.refused_at) == (32.0, 33.0)
    estimate.split(2)
    assert (estimate.limit, estimate.refused_at) == (16.0, 17.0)
    peak = 0.0
    for _ in range(40):  # the peer leaves room for 24 of ours for a while
        now = _lockstep_round(estimate, now, 24)
        peak = max(peak, estimate.limit)
    refused = estimate.refusals
    for _ in range(10):  # and comes back
        now = _lockstep_round(estimate, now, 16)
    # The whole's refusals seen in the share's terms (33-48 -> 16-24) stop the climb near
    # them (before: on to 24, and 8 calls refused when the peer came back).
    assert peak <= 22 and estimate.limit == 16
    assert estimate.refusals - refused <= 5
