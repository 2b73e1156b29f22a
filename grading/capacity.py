"""Capacity discovery: how many calls to keep in flight to one provider endpoint.

No I/O and no asyncio: a state machine fed with call starts, call outcomes and a clock, so
every rule is table-tested with a fake clock. It is TCP congestion control applied to
concurrent calls (RFC 5681 slow start and AIMD), reading each refusal as precisely as it
allows. Every call carries its *level*: how many calls were in flight when it started,
itself included. A 429 for a call at level n says the provider did not take n of ours.

- **Limited slow start** (RFC 5681, RFC 3742): from ``INITIAL_LIMIT`` (wider with much work
  waiting before the first answer, ``expect``: one call per ``OPENING_WORK``, up to
  ``MAX_OPENING``, as RFC 6928 widens TCP's first window), the limit doubles every
  round of calls, but by at most ``MAX_STEP`` per round, which bounds the overshoot of the
  last round; with the work known (``expect``), by one call per ``STEP_WORK`` calls still
  to make when that is more, so that the overshoot, refused once, stays within 1% of the
  work: a long run at a high cap reaches it in a few rounds instead of cap / 16. Growth
  goes out as a *wave* of probes, calls above the limit; the limit rises to the levels the
  provider answered. At the first 429 slow start ends, and the limit stays
  below the lowest level refused, where calls were answered (not at a fraction of the
  overshoot); for the opening round, all sent before any answer, at as many calls as the
  provider answered of it (its requests reach the provider in another order than their
  levels, so the lowest level refused is often well below the cap). Processes that split
  one command's work (``part``, ``grade --workers N``) each open at their part of
  ``INITIAL_LIMIT`` and grow by their part of ``MAX_STEP``, so that together they
  slow-start as one process would (each its own: twice the overshoot into the cap); a
  share handed over (``split``) starts from it instead, and the levels refused lately,
  counted in calls of the whole, are rescaled to the share (``_hold``). While a wave is
  out its probes borrow slots: a call that ends under the limit is not replaced until
  fewer than the limit are out, so a provider that counts a refused call as in flight
  until it answers refuses the wave's excess, not every call of a round.
- **A lucky wave** (traced with ``benchmarks/grading_throughput.py --trace``): answers wait
  for our event loop while the provider has already freed their slots, so our count of calls
  in flight runs ahead of the provider's, and a slow-start wave may be answered at levels the
  provider never saw (``grading.limiter`` ends a call when its answer arrives, which makes
  this rare where it can: our own HTTP transport; the rules below stay for the rest). A
  call the limit allowed, refused while still in slow start, says so: the limit goes back
  to where the last answered wave began, not a tenth down per round.
  A call at a level the round before had answered, sent before the wave that crossed the
  cap was refused and refused after it, lost its place to a probe that arrived first: it
  teaches no level, only the same lesson, back to where that wave began (unless no probe
  of the wave was answered, or more calls were refused than the wave sent: then another
  client fills the provider).
- **Multiplicative decrease** (AIMD): a 429 for a call the limit allowed all along (the
  capacity fell, another client took a share) cuts the limit to x0.9, and below the refused
  level, once per round: calls that started before the last decrease saw the old limit, so
  their 429s are the same signal. Retry-After pauses new calls (capped at ``MAX_PAUSE``).
- **Probing above the refused level** (CUBIC's plateau around ``W_max``, RFC 9438): below
  the level of the last refusal the limit climbs back (+1, +2, +4, ... per round); at it, it
  stays, and every ``probe_rounds`` rounds one call is sent above it. A refused probe leaves
  the limit as it is and doubles the interval (up to ``MAX_PROBE_ROUNDS``); one answered is
  asked again the next round (our count of calls in flight runs ahead of the provider's, so
  one answer may be luck), and a second raises the limit by one and quarters the interval
  (a call at that level refused within ``RAISE_TRIAL`` rounds shows both were luck: the
  limit goes back, with no cut, and the interval doubles instead, unless a peer shares the
  endpoint);
  answers past the old level mean the capacity grew, and the climb resumes. A probe borrows
  a slot like a wave, so a refused probe costs one 429. Requests reach the provider in
  another order than they start (a busy event loop sends them one after another): a call
  the limit allowed, refused while a probe was out, is the probe's 429 (the probe arrived
  first), and no decrease; refused again at a level probed, the interval doubles from what
  it was before lucky answers shortened it, so such luck does not probe ever more often.
  A climb past a refused level stops below the lowest level refused in the last
  ``LONG_SECONDS`` above it, and probes there (CUBIC's W_max): a single low refusal (calls
  reach the provider out of order) must not turn into a climb through the real cap.
- **Other processes** on the endpoint (``peer_refused``, learned through the database): a
  peer's refusal takes a tenth off, once per round; under ten calls, where a tenth is less
  than one call, it ends slow start and stops the limit where it is instead (the peer's own
  cut, a whole call, already takes the calls of all below the level refused).
- **Delay signal**, as in TCP Vegas and Netflix concurrency-limits' Gradient2: when the
  short-term average latency exceeds ``LATENCY_TOLERANCE`` x the baseline (the lowest recent
  average), the provider (or our own event loop) is queueing calls: the limit shrinks by
  baseline / current (at most by half, not below ``DELAY_FLOOR``), back to where calls did
  not queue; no pause. It judges only calls started since the last decrease, so one queue
  is not counted again while it drains.
- **Our own CPU** (the caller measures it: ``own_cpu``): while the process itself is busy
  for most of a core, latency rises in our own event loop, not at the provider, and more calls
  in flight cannot answer faster. Then the delay signal is not applied (a cut would leave
  the CPU idle between calls: measured, the limit sawtoothed between 16 and 23 at a provider
  taking 32) and the limit does not grow either (it would only queue more calls in our own
  loop); 429s are handled as always. When the process stops being busy, the short-term
  latency starts afresh (what was measured while busy was our own queue).
- **Resuming** (``resume``): a process may start from what the last one on the endpoint
  held (``grading.capacity_memory``, like Linux's per-destination ``tcp_metrics``): slow
  start from half of it, doubling back up to it in one round; refused just above it before,
  slow start ends there and probes above it as after a refusal; two probes answered there
  (the capacity grew since) and slow start goes on.
- The limit only grows while it is used (at least half of it in flight or waited for: the
  caller keeps ``waiting`` current), is capped by a user's ceiling when there is one, and
  by ``MAX_LIMIT`` otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

INITIAL_LIMIT = 4
# Work waiting before the first answer widens the opening (``expect``): one call of the
# opening per OPENING_WORK calls waiting, up to MAX_OPENING, so that the opening's overshoot
# into a small cap is at most 1% of the work.
OPENING_WORK = 100
MAX_OPENING = 16
MAX_LIMIT = 1024
MAX_STEP = 16  # calls per round the limit may grow by, in slow start and while climbing
# ... or one per STEP_WORK calls of the work still to make (``expect``), when that is more.
STEP_WORK = 100
MAX_PAUSE = 60.0
DECREASE = 0.9
FIRST_PROBE_ROUNDS = 8
MAX_PROBE_ROUNDS = 64
LATENCY_TOLERANCE = 2.0
DELAY_FLOOR = 16  # the delay signal never takes the limit below this
MIN_LATENCY_RISE = 0.005  # seconds: below this, latency "rising" is noise
LATENCY_WARMUP = 20  # samples before the delay signal is trusted
BASELINE_SAMPLES = 40
LONG_SECONDS = 30.0  # the latency baseline is the lowest average of about this long
RAISE_TRIAL = 8.0  # rounds (of the baseline latency) in which a refused raise was luck


@dataclass(frozen=True)
class Call:
    """One call in flight: when it started, at which level, and whether it is the probe."""

    started: float
    level: int
    wave: int = 0  # the wave of probes it belongs to; 0: not a probe
    opening: bool = False  # one of the opening round's calls, all sent before any answer

    @property
    def probe(self) -> bool:
        return self.wave > 0


@dataclass(frozen=True)
class CapacitySnapshot:
    limit: float
    ceiling: int | None
    slow_start: bool
    refused_at: float | None
    probe_rounds: int
    short_latency: float | None
    long_latency: float | None
    paused_until: float
    decreases: int
    refusals: int
    refused_rounds: int
    lowest_limit: float
    cpu_bound: bool = False
    answered: int = 0  # calls answered so far
    grew_past: float | None = None  # a refused level answered probes climbed past, since
    own_ceiling: int | None = None  # this process's part of the ceiling (``part``)
    opening_limit: float | None = None  # the opening round's limit (None: no call ended yet)
    opened: bool = False  # every call of the opening round has ended
    probing: bool = False  # a wave of probes (calls above the limit) is out or being sent


def _ewma(average: float | None, sample: float, samples: float) -> float:
    if average is None:
        return sample
    return average + (sample - average) * 2.0 / (samples + 1.0)


class CapacityEstimate:
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
        self._vouched = False  # an edge probe was answered once; the next answer counts
        self._to_send = 0  # probes of the current wave not sent yet
        self._out = 0  # probes of the current wave in flight
        self._wave_refused = False
        self.last_decrease = -math.inf
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

    # -- reading ---------------------------------------------------------------------------
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
            probing=bool(self._out or self._to_send),
        )

    # -- configuration ---------------------------------------------------------------------
    def set_ceiling(self, ceiling: int | None) -> None:
        if ceiling is not None and ceiling < 1:
            raise ValueError(f"concurrency must be >= 1, got {ceiling}")
        self.ceiling = ceiling
        self._clip()

    def set_part(self, part: float) -> None:
        """This process's part of the user's ceiling (0 < part <= 1), the rest being other
        processes' that split the same runs (``--workers``). Before any call, the opening
        limit takes that part too: N processes slow-starting together open, and grow (by
        ``max_step`` each), as one would."""
        if not 0 < part <= 1:
            raise ValueError(f"a part of the ceiling is in (0, 1], got {part}")
        if (self.samples == 0 and self.in_flight == 0 and self.slow_start
                and not self._resume_to):
            self.limit = max(1.0, float(math.floor(self.limit * part / self.part + 1e-9)))
            self.lowest_limit = self.limit
        self.part = part
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

    def own_cpu(self, busy: bool) -> None:
        """Whether the process is busy for most of a core (measured by the caller)."""
        if self.cpu_bound and not busy:
            self.short_latency, self._fresh = None, 0  # measured in our own queue
        if busy:
            self._to_send = 0  # probes not sent yet stay unsent: no growth while busy
        self.cpu_bound = busy

    def give_share(self) -> tuple[float, bool, float]:
        """Hand half of the limit to a process that joins now (the total stays what the
        provider was found to take), and half of this process's part of a user's ceiling;
        returns (the share handed over, whether a refused level is known, the part of the
        ceiling handed over). With a refused level known, the level above what is kept is
        the peer's: the limit stays there and only probes above it, as after a refusal."""
        return self.split(2)[0]

    def split(self, ways: int) -> list[tuple[float, bool, float]]:
        """Keep one of ``ways`` equal shares of the limit (and of this process's part of a
        user's ceiling) and hand over the others, for processes that join now: see
        ``give_share``. Each share is at least one call."""
        if ways < 2:
            raise ValueError(f"a limit is split two ways or more, got {ways}")
        keep = float(max(1, math.floor(self.limit / ways)))
        rest = max(float(ways - 1), self.limit - keep)
        each, extra = divmod(int(rest), ways - 1)
        shares = [float(each + (1 if i < extra else 0)) + (rest - int(rest) if i == 0 else 0.0)
                  for i in range(ways - 1)]
        # Climbing past a refused level (the capacity grew) is not slow start: a cap was
        # found, the climb looks for the next one; every share probes above, none doubles.
        known = self.refused_at is not None or self._grew_past is not None
        part = self.part / ways
        self.part = part
        self._hold(keep, known)
        return [(share, known, part) for share in shares]

    def take_share(self, limit: float, known: bool, part: float | None = None) -> None:
        """Start from a share handed over by a peer (``give_share``), not from slow start;
        ``part``: this process's part of a user's ceiling from now on."""
        if part is not None:
            self.part = min(1.0, part)
        self._hold(max(1.0, min(float(self.max_limit), limit)), known)

    def _hold(self, limit: float, known: bool) -> None:
        # The levels refused lately were counted in calls of the whole this process held;
        # the share held now sees them in proportion (traced, ``grade --workers 2`` at a cap
        # of 32: the owner kept 15 of 31, two probes answered at 17 by luck, and its climb
        # stopped below 32, refused before the split, not below 16: both processes' calls
        # went to 40 and 14 were refused in 0.3 s).
        if limit != self.limit:  # the limit is never below one call
            ratio = limit / self.limit
            self._refusals_seen = [(at, float(max(2, round(level * ratio))))
                                   for at, level in self._refusals_seen]
            if self._grew_past is not None:
                self._grew_past = float(max(2, round(self._grew_past * ratio)))
        self._resume_to = 0.0  # a share of the endpoint, not the whole of it
        self.limit = limit
        self.lowest_limit = min(self.lowest_limit, limit)
        self._to_send = 0
        self._wave += 1  # probes out were sent above the new limit: they teach nothing
        self._out = 0
        self._wave_refused = self._vouched = False
        if known:
            self.slow_start = False
            self.refused_at = limit + 1.0
            self.step = 1.0
            self.probe_rounds = FIRST_PROBE_ROUNDS
            self._rounds_to_probe = float(FIRST_PROBE_ROUNDS)

    def resume(self, level: float, capped: bool = False) -> None:
        """Start from what the last process on this endpoint held (``capacity_memory``): slow
        start from half of it, doubling back up to it in one round, unlimited by
        ``MAX_STEP`` (half, in case the capacity has fallen since: a round at half of the old
        level is not a storm). ``capped``: the provider refused just above that level, so
        slow start ends there and the limit only probes above it, as after a refusal (two
        probes answered: the capacity grew since, and slow start goes on); otherwise slow
        start goes on above it as usual."""
        if self.samples == 0 and self.slow_start:
            self._resume_to = min(float(self.max_limit), level)
            self._resume_capped = capped
            self.limit = max(self.limit, min(float(self.max_limit), math.floor(level / 2)))
            self.lowest_limit = self.limit

    def abandon_resume(self) -> None:
        """Another process is at work on the endpoint: what the last one held is not ours to
        take; slow start from scratch instead."""
        if self._resume_to:
            self._resume_to = 0.0
            if self.slow_start:
                self.limit = float(min(INITIAL_LIMIT, self.max_limit))
                self.lowest_limit = min(self.lowest_limit, self.limit)

    def expect(self, calls: int) -> None:
        """``calls`` are waiting to be made, before any call has ended: open wider with more
        work (``OPENING_WORK``, ``MAX_OPENING``; this process's part of it), as a TCP sender
        with much to send starts with a larger window (RFC 6928). The opening's overshoot
        into a small cap then costs at most 1% of the work; a long run at a high cap
        saves rounds of slow start in which the CPU is idle. Never lowers the limit; does
        nothing once a call has ended, after ``resume`` (the last process's level is the
        better guide) or above a user's ceiling. Before any answer, ``calls`` is also the
        work that bounds the growth of a round (``max_step``)."""
        if self.samples == 0:
            self.work = max(self.work, calls)
        if not (self._opening and self.slow_start and self.samples == 0
                and not self._resume_to and self.refusals == 0):
            return
        opening = math.floor(min(MAX_OPENING, calls // OPENING_WORK) * self.part + 1e-9)
        opening = min(opening, self.max_limit)
        if opening > self.limit:
            self.limit = float(opening)

    def seed(self, limit: float) -> None:
        """Start from what another process learned, instead of slow-starting from scratch."""
        if self.samples == 0 and limit > self.limit:
            self.limit = min(float(self.max_limit), limit)
            self.slow_start = False
            self._resume_to = 0.0

    # -- events ----------------------------------------------------------------------------
    def start(self, now: float) -> Call:
        """A call starts now (the caller checked ``can_start``)."""
        self.in_flight += 1
        if self._opening and self.slow_start:
            self._out += 1
            self._opening_left += 1
            return Call(started=now, level=self.in_flight, wave=self._wave, opening=True)
        if self.in_flight <= self.base_slots or self._to_send == 0:
            return Call(started=now, level=self.in_flight)
        self._to_send -= 1
        self._out += 1
        call = Call(started=now, level=self.in_flight, wave=self._wave)
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

    def _opening_ended(self) -> None:
        """Once every call of the opening round has ended, refused ones among them: the
        provider took as many calls at once as it answered, whatever the levels refused say.
        The round's requests reach the provider in another order than they started (sent one
        after another by a busy event loop), so the lowest level refused is often well below
        the cap (traced at a cap of 8: 16 calls out, 8 answered, the lowest refused at level 5:
        the limit fell to 4 and took seconds to climb back)."""
        if self._opening_left or self.opened:
            return
        self.opened = True
        took = float(min(self._opening_took, self.max_limit))
        if self.refused_at is None or took < 1 or took <= self.limit:
            return
        self.limit = took
        self.refused_at = max(self.refused_at, took + 1.0)

    def _succeeded(self, call: Call, now: float) -> None:
        # Before this call ended; calls waiting for a slot count: an event loop takes in a
        # round's answers one after another before the calls they free start (traced at a cap
        # of 128: 6 of 16 in flight at the opening's last answer, and each wave went out one
        # round late, the ramp twice as slow).
        used = (self.in_flight + self.waiting) * 2 >= self.limit
        current = self._end(call)
        if call is self._edge_call:
            self._edge_done = now
        self._observe_latency(now - call.started, now, fresh=call.started > self.last_decrease)
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
            if self._edge and not self._vouched:
                # Our count runs ahead of the provider's (answers wait for our event loop):
                # one answer above a refused level may be luck. A second one, next round,
                # raises the limit.
                self._vouched = True
            else:
                if self._edge and level > self.limit:
                    self._raised = (level, now)
                self._vouched = False
                self.limit = max(self.limit, level)
            if self._out == 0 and self._to_send == 0:
                self._wave_answered(now)
        elif used and not call.probe:
            self._rounds_to_probe -= 1.0 / self.limit
        if used and not self.cpu_bound:
            self._arm()

    def _refused(self, call: Call, now: float, retry_after: float | None = None) -> None:
        current = self._end(call)
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
            self._vouched = False
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
        if (not call.probe and call.started <= self._crossed_at
                and call.level <= self._crossing_base
                and (self._crossing_lucky or self._crossing_base < self.limit)
                and self._crossing_refused <= self._crossing_size):
            # Sent before slow start's last wave was refused, at a level the round before had
            # answered, while some of the wave was answered and no more calls were refused
            # than the wave sent: a probe reached the provider first (requests arrive in
            # another order than their levels), was answered, and this call was refused in
            # its place. Its level says nothing; what it says is that the wave's answers
            # were luck, as for a refusal in slow start: back to where the wave began. Read
            # as a level, it cut the limit to below it (traced at a cap of 32: a call at
            # level 14, sent 4 ms before a wave to 48, refused after it; the limit fell from
            # 37 to 13, took 8 s to climb back, and the climb went into the cap again: 58
            # refusals in 1,600). With no probe answered, or more refusals than the wave's
            # size, they are not the wave's doing: another client fills the provider.
            self._crossing_lucky = True
            self.limit = min(self.limit, self._crossing_base)
            self.refused_at = min(self.refused_at or math.inf, self._crossing_base + 1.0)
            self.lowest_limit = min(self.lowest_limit, self.limit)
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

    def _raised_by_luck(self, call: Call, now: float) -> bool:
        """A call at or above the level that two answered probes raised the limit to, sent
        after the raise, refused, with no other process on the endpoint lately (a peer's
        calls take what a raise found free): the probes' answers were luck (they arrive
        while the provider has freed slots whose answers wait for our event loop), as they
        will be again at this level. Back below it with no cut (the capacity did not fall:
        we tried), probing there half as often: traced at a cap of 32, every probe at 33
        was answered; each raise cost 6-7 refusals, then a tenth off the limit, and answered
        probes shortened the interval, so a raise came back within a second, three in all."""
        if self._raised is None or call.probe:
            return False
        level, when = self._raised
        latency = self.long_latency
        if now - when > RAISE_TRIAL * (latency if latency and math.isfinite(latency) else 1.0):
            self._raised = None  # the raise held for rounds: this is another story
            return False
        if (call.started <= when or call.level < level or self.part < 1.0
                or now - self._peer_refused_at <= LONG_SECONDS):
            return False
        self._raised = None
        self.limit = min(self.limit, level - 1.0)
        self.refused_at = min(self.refused_at or math.inf, level)
        self.lowest_limit = min(self.lowest_limit, self.limit)
        self._grew_past = None
        self._stop_growth(now)
        self.probe_rounds = self._longer_probe_interval()
        self._rounds_to_probe = float(self.probe_rounds)
        return True

    def _blame_probe(self, call: Call, now: float) -> bool:
        """A call the limit allowed, refused while a probe above the refused level was out:
        the probe's 429. Requests reach the provider in another order than they start (a busy
        event loop sends them one after another), so the probe may arrive first, be answered,
        and the provider refuses the next arrival instead: the probe's answer was luck, and
        the limit, which no other call went above, stays below the probe's level."""
        probe = self._edge_call
        if probe is None or call.probe or call.level >= probe.level:
            return False
        done = self._edge_done if self._edge_done is not None else now
        if not (call.started <= done and now >= probe.started):
            return False  # not in flight beside the probe
        if self._edge_blamed:  # the same probe's 429, already counted
            if now > done and call.level >= self.limit - 1:
                # ... but a second one at the limit, after the probe's answer: more calls
                # were over the cap than the probe alone, so the limit the lucky probe left
                # is refused too: learned, not a cut (simulated at a cap of 32 with requests
                # sent up to 20 ms late: a probe answered at 35 left the limit at 34, and 27
                # calls at 33-34 were refused and blamed on it in 0.4 s).
                self.limit = min(self.limit, max(1.0, float(call.level) - 1.0))
                self.refused_at = min(self.refused_at or math.inf, float(call.level))
                self.lowest_limit = min(self.lowest_limit, self.limit)
            return True
        self._edge_blamed = True
        level = float(probe.level)
        if self.refused_at is None:  # the probe's answers looked like growth: they were not
            self.slow_start, self.step = False, 1.0
        self.refused_at = min(self.refused_at or math.inf, level)
        if self.limit >= level:
            self.limit = level - 1.0
            self.lowest_limit = min(self.lowest_limit, self.limit)
        self._vouched = False
        self.probe_rounds = self._longer_probe_interval()
        self._rounds_to_probe = float(self.probe_rounds)
        return True

    def failed(self, call: Call, now: float) -> None:
        """The call failed otherwise (5xx, timeout, lost connection): no lesson learned."""
        if self._end(call) and self._out == 0 and self._to_send == 0:
            self._wave += 1  # a lost probe: the next wave may go
            self._wave_refused = False
        if call.opening:
            self._opening_ended()

    def peer_refused(self, now: float, round_time: float) -> None:
        """Another process on this endpoint was refused (learned through the database, once
        per round): the provider is full with our calls and the peers' together, so the
        limit comes down by a tenth, as for our own refusal. Under ten calls a tenth is less
        than one call: the limit stays, and stops there (slow start ends, it probes above
        it as at a level refused). The peer refused has cut its own limit by a whole call,
        which takes the calls of all of us below the level refused; taking one off here too
        cut the whole twice (traced, ``grade --workers 2`` at a cap of 8: both processes
        went 4 -> 3 on one refusal, and held 6 of the 8 slots for the next 7 seconds)."""
        self._peer_refused_at = now
        if self.limit * (1.0 - DECREASE) >= 1.0:
            self._decrease(now - round_time, now, self.limit * DECREASE, self.limit)
            return
        if now - round_time <= self.last_decrease:
            return  # this round already paid
        self._stop_growth(now)
        if self.refused_at is None or self.refused_at > self.base_slots + 1:
            self.refused_at = float(self.base_slots + 1)
            self.probe_rounds = FIRST_PROBE_ROUNDS
            self._rounds_to_probe = float(FIRST_PROBE_ROUNDS)

    def pause_until(self, until: float) -> None:
        self.paused_until = max(self.paused_until, until)

    # -- internals -------------------------------------------------------------------------
    def _end(self, call: Call) -> bool:
        """Count the call out; True when it is a probe of the current wave."""
        if self._opening:
            self.opening_limit = self.limit
        self._opening = False
        self.in_flight = max(0, self.in_flight - 1)
        if call.opening:
            self._opening_left -= 1
        elif not self._opening_left:
            self.opened = True  # no opening round (a share handed over, a seeded limit)
        if call.wave and call.wave == self._wave:
            self._out -= 1
            return True
        return False

    def _remember_refusal(self, level: float, now: float) -> None:
        self._refusals_seen = [(at, seen) for at, seen in self._refusals_seen
                               if now - at <= LONG_SECONDS and seen != level]
        self._refusals_seen.append((now, level))

    def _next_cap(self, now: float) -> float | None:
        """The lowest level refused in the last ``LONG_SECONDS`` above the limit: where a
        climb past a refused level stops and probes (CUBIC's W_max: what refused before
        likely refuses again)."""
        above = [level for at, level in self._refusals_seen
                 if now - at <= LONG_SECONDS and level > self.limit + 1]
        return min(above) if above else None

    def _wave_answered(self, now: float) -> None:
        if not self._wave_refused:
            if not self._edge:
                self.step = min(self.step * 2.0, float(self.max_step))
                if self.slow_start:
                    self._answered_base = self._wave_base
            elif self._vouched:  # once: ask again next round before believing it
                self._rounds_to_probe = 1.0
            else:  # answered twice above the refused level: the capacity may have grown
                self._probed_before = max(self._probed_before, self.probe_rounds)
                self.probe_rounds = max(1, self.probe_rounds // 4)
                self._rounds_to_probe = float(self.probe_rounds)
                if self.refused_at is not None and self.limit >= self.refused_at + 1:
                    self._grew_past = self.refused_at
                    # Past a refused level, the climb stops below one refused shortly before
                    # (traced at a cap of 32: refused at 33, then once at 30, the climb past
                    # 30 went on into the cap and some 20 calls of a round were refused).
                    self.refused_at, self.step = self._next_cap(now), 1.0
                    # Only remembered, never refused here: slow start goes on (as cold).
                    self.slow_start = self._remembered_plateau and self.refused_at is None
                    self._remembered_plateau = False
        self._wave += 1
        self._wave_refused = False

    def _longer_probe_interval(self) -> int:
        """Refused again at the level probed: probe half as often as before. "Before" is
        before answered probes shortened the interval: a probe can be answered above the
        provider's cap by luck (our count of calls in flight is not the provider's while
        requests wait to be sent and answers wait to be read), and doubling the shortened
        interval would, round after round, probe ever more often into the same cap."""
        return min(MAX_PROBE_ROUNDS, 2 * max(self.probe_rounds, self._probed_before))

    def _arm(self) -> None:
        """Arm the next wave of probes, if one is due: it goes when the limit is full."""
        if self._out or self._to_send:
            return
        base = self.base_slots
        room = self.max_limit - base
        if room <= 0:
            return
        if self.slow_start and self._resume_capped and base >= self._resume_to:
            # Back at the level a process held before, refused just above it: a plateau.
            self.slow_start, self._resume_to, self._resume_capped = False, 0.0, False
            # Probed as after a refusal: our count of calls in flight runs ahead of the
            # provider's, so sooner probes are answered above the cap by luck and climb
            # into it (simulated with a 40 ms answer lag: 17 refusals instead of 6 in 1,600
            # calls at a cap of 32).
            self._remembered_plateau = True
            self.refused_at = float(base + 1)
            self.probe_rounds = FIRST_PROBE_ROUNDS
            self._rounds_to_probe = float(FIRST_PROBE_ROUNDS)
            return
        if self.slow_start:
            size = min(base, self.max_step)
            if base < self._resume_to:  # back up to the level a process held before
                size = max(size, min(base, int(self._resume_to) - base))
        elif self.refused_at is None:
            size = int(self.step)
        elif base + 1 < self.refused_at:  # climbing back below the refused level
            size = min(int(self.step), int(self.refused_at) - 1 - base)
        elif self._rounds_to_probe <= 0:
            size = 1
        else:
            return
        self._edge = self.refused_at is not None and base + size >= self.refused_at
        self._to_send = self._wave_size = max(1, min(size, room))
        self._wave_base = float(base)
        self._wave += 1
        self._wave_refused = False

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
        self._wave_refused = self._vouched = False
        self.last_decrease = now

    def _observe_latency(self, latency: float, now: float, *, fresh: bool) -> None:
        self.samples += 1
        if fresh:  # the short-term average is of calls started since the last decrease
            self._fresh += 1
            self.short_latency = _ewma(self.short_latency, latency, max(8.0, self.limit))
        self._smooth_latency = _ewma(self._smooth_latency, latency, BASELINE_SAMPLES)
        # The baseline is the lowest smoothed latency of the last LONG_SECONDS or so (two
        # half-window buckets): it follows a model that got slower for good, and cannot
        # creep upwards with a queue we keep building ourselves. Smoothed over more calls
        # than the short-term average, so that noise does not pull it down.
        if now - self._bucket_started >= LONG_SECONDS / 2:
            self._previous_min, self._bucket_min = self._bucket_min, math.inf
            self._bucket_started = now
        if self.samples >= BASELINE_SAMPLES / 2:
            self._bucket_min = min(self._bucket_min, self._smooth_latency)
        self.long_latency = min(self._bucket_min, self._previous_min)

    def _congested(self) -> bool:
        if (self.samples < LATENCY_WARMUP or self._fresh < max(8.0, self.limit / 2)
                or self.short_latency is None
                or self.long_latency is None or math.isinf(self.long_latency)):
            return False
        assert self.long_latency is not None
        return (self.short_latency > LATENCY_TOLERANCE * self.long_latency
                and self.short_latency - self.long_latency > MIN_LATENCY_RISE)
