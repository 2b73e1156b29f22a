"""Capacity shared between processes: a part of a user's ceiling (``--workers``), shares
of a limit handed over, a limit remembered by the last process (``capacity_memory``),
the work known before the first answer, and peers' refusals."""

from __future__ import annotations

import math

from grading.capacity.constants import (
    DECREASE,
    FIRST_PROBE_ROUNDS,
    INITIAL_LIMIT,
    MAX_OPENING,
    OPENING_WORK,
)


class Sharing:
    """Sharing an endpoint with other processes; mixed into ``CapacityEstimate``."""

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
        self._wave_refused, self._vouches = False, 0
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
