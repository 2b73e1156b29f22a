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
  provider never saw. A call the limit allowed, refused while still in slow start, says so:
  the limit goes back to where the last answered wave began, not a tenth down per round.
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
  one answer may be luck), and ``RAISE_ANSWERS`` answered in a row (``QUICK_RAISE_ANSWERS``
  beside a peer, at a level only remembered, or once a raise to the refused level has held
  for ``RAISE_TRIAL`` rounds) raise the limit by one and quarter the interval
  (a call at that level refused within ``RAISE_TRIAL`` rounds shows they were luck: the
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

Where the rules live: ``estimate`` (the state, the events, the decrease), ``growth`` (waves of
probes, the climb, the plateau), ``luck`` (refusals and answers that say no level),
``sharing`` (other processes, the remembered limit, the work known), ``delay`` (latency and
our own CPU), ``constants``; ``CapacityEstimate`` mixes them into one state machine.
"""

from grading.capacity.calls import Call, CapacitySnapshot
from grading.capacity.constants import (
    BASELINE_SAMPLES,
    DECREASE,
    DELAY_FLOOR,
    FIRST_PROBE_ROUNDS,
    INITIAL_LIMIT,
    LATENCY_TOLERANCE,
    LATENCY_WARMUP,
    LONG_SECONDS,
    MAX_LIMIT,
    MAX_OPENING,
    MAX_PAUSE,
    MAX_PROBE_ROUNDS,
    MAX_STEP,
    MIN_LATENCY_RISE,
    OPENING_WORK,
    QUICK_RAISE_ANSWERS,
    RAISE_ANSWERS,
    RAISE_TRIAL,
    STEP_WORK,
)
from grading.capacity.estimate import CapacityEstimate

__all__ = [
    "BASELINE_SAMPLES",
    "DECREASE",
    "DELAY_FLOOR",
    "FIRST_PROBE_ROUNDS",
    "INITIAL_LIMIT",
    "LATENCY_TOLERANCE",
    "LATENCY_WARMUP",
    "LONG_SECONDS",
    "MAX_LIMIT",
    "MAX_OPENING",
    "MAX_PAUSE",
    "MAX_PROBE_ROUNDS",
    "MAX_STEP",
    "MIN_LATENCY_RISE",
    "OPENING_WORK",
    "QUICK_RAISE_ANSWERS",
    "RAISE_ANSWERS",
    "RAISE_TRIAL",
    "STEP_WORK",
    "Call",
    "CapacityEstimate",
    "CapacitySnapshot",
]
