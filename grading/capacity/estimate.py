"""The estimate of one endpoint's capacity: its state, the events it is fed (a call starts,
is answered, refused or failed) and the decrease; the rules live in the mixins beside it."""

from __future__ import annotations

import math
from collections import deque

from grading.capacity.calls import Call, CapacitySnapshot, Overtaking
from grading.capacity.constants import (
    DECREASE,
    DELAY_FLOOR,
    FIRST_PROBE_ROUNDS,
    INITIAL_LIMIT,
    LONG_SECONDS,
    MAX_LIMIT,
    MAX_PAUSE,
    MAX_STEP,
    QUICK_RAISE_ANSWERS,
    RAISE_ANSWERS,
    STEP_WORK,
)
from grading.capacity.delay import DelaySignal
from grading.capacity.growth import Growth
from grading.capacity.luck import LuckRules
from grading.capacity.queue import QUEUE_SAMPLES, Bursts, QueueSignal
from grading.capacity.sharing import Sharing


class CapacityEstimate(Sharing, LuckRules, Growth, DelaySignal, QueueSignal):
    """The discovered concurrency of one endpoint; ``now`` is any monotonic clock's reading."""

    def __init__(self, ceiling: int | None = None, *, initial: int = INITIAL_LIMIT):
        self.ceiling = ceiling
        self.part = 1.0  # of the user's ceiling, this process's (the rest is its helpers')
        self.limit = float(min(initial, self.max_limit))
        self.in_flight = 0
        # Calls waiting for a slot (the caller's count, kept current before each event):
        # demand for the limit beyond what is in flight.
        self.waiting = 0
        self.work = 0  # calls to make in all, as known before the first answer (``expect``)
        self.slow_start = True
        self.refused_at: float | None = None
        self.probe_rounds = FIRST_PROBE_ROUNDS
        self._rounds_to_probe = float(FIRST_PROBE_ROUNDS)
        self.step = 1.0  # the next wave's size while climbing; doubles per answered wave
        # The current wave of probes (calls above the limit). The opening calls are a wave of
        # their own: the first answers must not arm the next wave before the rest answer.
        self._wave = 1
        self._opening = True
        self.opening_limit: float | None = None  # the limit the opening round went out under
        self._opening_left = 0  # calls of the opening round still in flight
        self._opening_took = 0  # ... and answered
        self.opened = False  # every call of the opening round has ended
        self._edge = False  # the wave goes to or above the refused level
        self._vouches = 0  # edge probes answered in a row; at RAISE_ANSWERS the limit rises
        self._to_send = 0  # probes of the current wave not sent yet
        self._out = 0  # probes of the current wave in flight
        self._wave_refused = False
        self.last_decrease = -math.inf
        self._overtaking = Overtaking()
        self._floor = 1.0  # no refusal of the round since the last decrease goes lower
        self.paused_until = -math.inf
        self.short_latency: float | None = None
        self.long_latency: float | None = None
        self.samples = 0
        self._fresh = 0  # latency samples of calls started since the last decrease
        self._bucket_started = 0.0
        self._smooth_latency: float | None = None
        self._bucket_min = math.inf
        self._previous_min = math.inf
        self.decreases = 0
        self.refusals = 0
        self.refused_rounds = 0  # decreases for our own 429s (what peers are told)
        self.lowest_limit = self.limit
        self.cpu_bound = False  # the process is busy for most of a core (``own_cpu``)
        self._resume_to = 0.0  # in slow start, double up to this level (``resume``)
        self._resume_capped = False  # ... and stop there: refused just above it before
        self._remembered_plateau = False  # the refused level is the memory's, not a 429's
        # The probe interval before answered probes shortened it: refused again at that
        # level, the next interval doubles this, not the shortened one.
        self._probed_before = 0
        self._grew_past: float | None = None  # the refused level answered probes climbed past
        # The last probe sent at or above the refused level, and when it was answered.
        self._edge_call: Call | None = None
        self._edge_done: float | None = None
        self._edge_blamed = False
        self._wave_base = 0.0  # the limit when the current wave was armed
        self._answered_base = 0.0  # ... and when the last slow-start wave answered was
        self._wave_size = 0  # probes in the current wave
        # When slow start's last wave was first refused (it crossed the cap), its base and
        # size, and how many calls sent before then were refused since.
        self._crossed_at = -math.inf
        self._crossing_base = 0.0
        self._crossing_size = 0
        self._crossing_refused = 0
        self._crossing_lucky = False  # a call refused in a probe's place took the limit back
        # The level vouched probes raised the limit to at or above a refused level, and when.
        self._raised: tuple[float, float] | None = None
        self._peer_refused_at = -math.inf  # when a peer's refusal was last heard of
        self._refusals_seen: list[tuple[float, float]] = []  # (when, level), recent ones
        self.queue_slots: int | None = None  # the server queues calls beyond this (``queue``)
        self._queue_samples = deque(maxlen=QUEUE_SAMPLES)  # recent answers (``queue``)
        self._bursts = Bursts()  # calls started together, whose order at the server is a race

    # -- reading -----------------------------------------------------------------------
    @property
    def max_limit(self) -> int:
        return MAX_LIMIT if self.ceiling is None else min(MAX_LIMIT, self.own_ceiling)

    @property
    def own_ceiling(self) -> int:
        """This process's part of the user's ceiling (``part``): processes that split a run
        keep, together, at most the ceiling in flight (at least one call each)."""
        assert self.ceiling is not None
        return max(1, math.floor(self.ceiling * self.part + 1e-9))

    @property
    def base_slots(self) -> int:
        return max(1, int(self.limit + 1e-9))

    @property
    def slots(self) -> int:
        """Calls allowed in flight now: the limit, rounded down, plus a wave of probes while
        it is being sent. Once sent, its probes borrow slots: calls that end under the limit
        are not replaced until the probes are answered or fewer than the limit are out."""
        if self._to_send:
            return self.base_slots + self._to_send + self._out
        return self.base_slots

    def can_start(self, now: float) -> bool:
        return now >= self.paused_until and self.in_flight < self.slots

    def snapshot(self) -> CapacitySnapshot:
        return CapacitySnapshot(
            limit=self.limit, ceiling=self.ceiling, slow_start=self.slow_start,
            refused_at=self.refused_at, probe_rounds=self.probe_rounds,
            short_latency=self.short_latency, long_latency=self.long_latency,
            own_ceiling=None if self.ceiling is None else self.own_ceiling,
            paused_until=self.paused_until, decreases=self.decreases, refusals=self.refusals,
            refused_rounds=self.refused_rounds, lowest_limit=self.lowest_limit,
            cpu_bound=self.cpu_bound, answered=self.samples, grew_past=self._grew_past,
            opening_limit=self.opening_limit, opened=self.opened,
            probing=bool(self._out or self._to_send), queue_slots=self.queue_slots,
        )

    # -- configuration -----------------------------------------------------------------
    def set_ceiling(self, ceiling: int | None) -> None:
        if ceiling is not None and ceiling < 1:
            raise ValueError(f"concurrency must be >= 1, got {ceiling}")
        self.ceiling = ceiling
        self._clip()

    @property
    def max_step(self) -> int:
        """Calls per round the limit may grow by: ``MAX_STEP``, or one per ``STEP_WORK`` calls
        of the work still to make (``expect``) when that is more; this process's part of it
        when several split the work (``part``), so their overshoot together is one's."""
        step = max(MAX_STEP, (self.work - self.samples) // STEP_WORK)
        return max(1, math.floor(step * self.part + 1e-9))

    def _clip(self) -> None:
        self.limit = min(self.limit, float(self.max_limit))
        self._to_send = max(0, min(self._to_send, self.max_limit - self.base_slots))

    # -- events ------------------------------------------------------------------------
    def start(self, now: float) -> Call:
        """A call starts now (the caller checked ``can_start``)."""
        self.in_flight += 1
        ids = {"seq": self._overtaking.number(), "burst": self._bursts.join(self.in_flight)}
        if self._opening and self.slow_start:
            self._out += 1
            self._opening_left += 1
            return Call(started=now, level=self.in_flight, wave=self._wave, opening=True, **ids)
        if self.in_flight <= self.base_slots or self._to_send == 0:
            return Call(started=now, level=self.in_flight, **ids)
        self._to_send -= 1
        self._out += 1
        call = Call(started=now, level=self.in_flight, wave=self._wave, **ids)
        if self._edge:
            self._edge_call, self._edge_done, self._edge_blamed = call, None, False
        return call

    def succeeded(self, call: Call, now: float) -> None:
        self._succeeded(call, now)
        if call.opening:
            self._opening_took += 1
            self._opening_ended()

    def refused(self, call: Call, now: float, retry_after: float | None = None) -> None:
        """The provider answered 429."""
        self._refused(call, now, retry_after)
        if call.opening:
            self._opening_ended()

    def _succeeded(self, call: Call, now: float) -> None:
        # Before this call ended; calls waiting for a slot count: an event loop takes in a
        # round's answers one after another before the calls they free start (traced at a cap
        # of 128: 6 of 16 in flight at the opening's last answer, and each wave went out one
        # round late, the ramp twice as slow).
        used = (self.in_flight + self.waiting) * 2 >= self.limit
        current = self._end(call)
        self._overtaking.answered(call, now)
        if call is self._edge_call:
            self._edge_done = now
        self._observe_latency(now - call.started, now, fresh=call.started > self.last_decrease)
        if (slots := self._observe_queue(call, now - call.started)) is not None:
            self._queued(slots, now)
            return
        if not self.cpu_bound and self._congested() and self.limit > DELAY_FLOOR:
            # Vegas/Gradient2: shrink in proportion, back to where latency was the baseline.
            # Not below DELAY_FLOOR: so few calls hardly queue at a provider, and latency
            # that rises with them is our own event loop's, busy with its share of the CPU;
            # cutting there would only leave the CPU idle between calls.
            assert self.short_latency and self.long_latency
            factor = max(0.5, self.long_latency / self.short_latency, DELAY_FLOOR / self.limit)
            self._decrease(call.started, now, self.limit * factor, None)
            return
        if current:  # the provider took a call above the limit: the limit may rise to it
            level = float(min(call.level, self.max_limit))
            if self._wave_refused and self.refused_at is not None:
                level = min(level, self.refused_at - 1.0)  # a sibling probe was refused
            if self._edge and self._vouches + 1 < self._answers_to_raise(now):
                # Our count runs ahead of the provider's (answers wait for our event loop):
                # an answer above a refused level may be luck. Several in a row, one a
                # round, raise the limit.
                self._vouches += 1
            else:
                if self._edge and level > self.limit:
                    self._raised = (level, now)
                self._vouches = 0
                self.limit = max(self.limit, level)
            if self._out == 0 and self._to_send == 0:
                self._wave_answered(now)
        elif used and not call.probe:
            self._rounds_to_probe -= 1.0 / self.limit
        if used and not self.cpu_bound:
            self._arm()

    def _refused(self, call: Call, now: float, retry_after: float | None = None) -> None:
        current = self._end(call)
        self._overtaking.answered(call, now)
        if call is self._edge_call:
            self._edge_done = now
        self.refusals += 1
        self._remember_refusal(float(call.level), now)
        if retry_after:
            self.paused_until = max(self.paused_until, now + min(retry_after, MAX_PAUSE))
        below = float(max(1, call.level - 1))
        self._remembered_plateau = False
        if call.started <= self._crossed_at:
            self._crossing_refused += 1
        if current:  # a probe: the limit stays where calls are answered
            self._vouches = 0
            edge = not self.slow_start and self.refused_at is not None
            if self.slow_start and not call.opening and not self._wave_refused:  # crossed
                self._crossed_at, self._crossing_base = now, self._wave_base
                self._crossing_size, self._crossing_refused = self._wave_size, 1
                self._crossing_lucky = False
            self.refused_at = min(self.refused_at or math.inf, float(call.level))
            if not self._wave_refused:
                self._wave_refused = True
                self.probe_rounds = (self._longer_probe_interval() if edge
                                     else FIRST_PROBE_ROUNDS)
            self._rounds_to_probe = float(self.probe_rounds)
            self.slow_start = False
            if below < self.limit:  # the opening wave: refused below where it started
                self.limit = below
                self.decreases += 1
                self.lowest_limit = min(self.lowest_limit, self.limit)
            self._to_send = 0
            # Calls started before this answer saw the same limit: their 429s are this signal.
            self.last_decrease = max(self.last_decrease, now)
            return
        if self._raised_by_luck(call, now):  # before a probe out above is blamed
            return
        if self._blame_probe(call, now):
            return
        if self._refused_in_a_probes_place(call):
            return
        if call.started <= self.last_decrease or call.probe:
            # The round already paid (or a probe of a wave given up): only learn the level.
            self.limit = min(self.limit, max(below, self._floor))
            self.refused_at = min(self.refused_at or math.inf, float(call.level))
            self.lowest_limit = min(self.lowest_limit, self.limit)
            return
        # Below the refused level, but by at most half in one round: with other clients on
        # the provider, or a limit on requests per minute, our own level says less.
        self._floor = self.limit / 2 if not self.slow_start else 1.0
        self.refused_rounds += 1
        target = min(max(below, self._floor), self.limit * DECREASE, self.limit - 1.0)
        if self.slow_start and self._answered_base:
            # A call the limit allowed, refused in slow start: the last wave's answers were
            # luck (they waited for our event loop while the provider freed their slots), so
            # back to where that wave began at once. A tenth down at a time, the next round
            # of calls went out at levels the provider refuses (traced at a cap of 32: limit
            # 48, cut to 43, then some 30 calls at levels 34-44 refused).
            target = min(target, self._answered_base)
        self._decrease(call.started, now, target, float(call.level))

    def failed(self, call: Call, now: float) -> None:
        """The call failed otherwise (5xx, timeout, lost connection): no lesson learned."""
        if self._end(call) and self._out == 0 and self._to_send == 0:
            self._wave += 1  # a lost probe: the next wave may go
            self._wave_refused = False
        if call.opening:
            self._opening_ended()

    def timed_out(self, call: Call, now: float) -> None:
        """No answer within the timeout for a call n-th in the server's queue: a server that
        queues runs fewer than n calls at once, and more would wait in its queue behind the one
        it still runs for nobody (it cannot cancel it, ``grading.busy_server``). n is the
        call's level plus the later calls answered while it waited (``Overtaking``). The limit
        goes below n (one decrease a round; a lower n of the same round still lowers it, as
        timeouts land in any order) and stays there, probing above it rarely, as after a
        refusal. A call alone that timed out says nothing of parallelism: no lesson."""
        self.failed(call, now)
        level = call.level + self._overtaking.ahead_of(call)
        if level <= 1:
            return
        if call.started <= self.last_decrease:  # the round already paid: only learn the level
            self.limit = max(1.0, min(self.limit, float(level - 1)))
            self.refused_at = min(self.refused_at or math.inf, float(level))
            self.lowest_limit = min(self.lowest_limit, self.limit)
            return
        self._decrease(call.started, now, float(level - 1), float(level))

    def pause_until(self, until: float) -> None:
        self.paused_until = max(self.paused_until, until)

    # -- internals ---------------------------------------------------------------------
    def _end(self, call: Call) -> bool:
        """Count the call out; True when it is a probe of the current wave."""
        if self._opening:
            self.opening_limit = self.limit
        self._opening = False
        self._bursts.close()
        self.in_flight = max(0, self.in_flight - 1)
        if call.opening:
            self._opening_left -= 1
        elif not self._opening_left:
            self.opened = True  # no opening round (a share handed over, a seeded limit)
        if call.wave and call.wave == self._wave:
            self._out -= 1
            return True
        return False

    def _answers_to_raise(self, now: float) -> int:
        """Edge probes answered in a row before the limit rises to them: ``RAISE_ANSWERS``
        alone on the endpoint above a level refused in this process (traced at a cap of 32,
        a single probe at 33 was refused about one time in five, so two in a row were
        answered more often than not, and each raise cost a round of refusals at 33).
        ``QUICK_RAISE_ANSWERS`` with peers (their calls take what a raise found free: a
        slow raise leaves slots idle), above a level only remembered, or once a raise to
        the refused level has held for ``RAISE_TRIAL`` rounds (the capacity grew: the next
        level is likely free too)."""
        beside_a_peer = self.part < 1.0 or now - self._peer_refused_at <= LONG_SECONDS
        raise_held = (self.refused_at is not None and self.limit >= self.refused_at
                      and not self._on_trial(now))
        if beside_a_peer or self._remembered_plateau or raise_held:
            return QUICK_RAISE_ANSWERS
        return RAISE_ANSWERS

    def _remember_refusal(self, level: float, now: float) -> None:
        self._refusals_seen = [(at, seen) for at, seen in self._refusals_seen
                               if now - at <= LONG_SECONDS and seen != level]
        self._refusals_seen.append((now, level))

    def _decrease(self, started: float, now: float, target: float,
                  level: float | None) -> None:
        """Once per round; ``level``: refused there (None: queueing, which keeps what the
        refusals taught)."""
        if started <= self.last_decrease:
            return  # this round already paid
        self._raised = None
        if level is not None:
            last = self.refused_at if self.refused_at is not None else self._grew_past
            same_level = last is not None and abs(level - last) <= max(2.0, 0.1 * level)
            self._grew_past = None
            self.probe_rounds = (self._longer_probe_interval() if same_level
                                 else FIRST_PROBE_ROUNDS)
            if not same_level:
                self._probed_before = 0
            self._rounds_to_probe = float(self.probe_rounds)
            self.refused_at = level
        self.limit = max(1.0, min(self.limit, target))
        self._stop_growth(now)
        self.short_latency, self._fresh = None, 0
        self.decreases += 1
        self.lowest_limit = min(self.lowest_limit, self.limit)

    def _stop_growth(self, now: float) -> None:
        """Slow start ends and the current wave is given up (its probes in flight were sent
        above the limit now: they teach nothing); calls started before ``now`` saw it."""
        self.slow_start = False
        self.step = 1.0
        self._wave += 1
        self._to_send = self._out = 0
        self._wave_refused, self._vouches = False, 0
        self.last_decrease = now
