"""Refusals and answers that were luck: requests reach the provider in another order than
their levels, and answers wait for our event loop while the provider has freed their slots.
Each rule here keeps such a refusal from being read as a level, or such an answer as room."""

from __future__ import annotations

import math

from grading.capacity.calls import Call
from grading.capacity.constants import LONG_SECONDS, RAISE_TRIAL


class LuckRules:
    """Reading luck; mixed into ``CapacityEstimate``."""

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
        if (self.refused_at is None or took < 1 or took <= self.limit
                or self.queue_slots is not None):  # answered, but queued: not at once
            return
        self.limit = took
        self.refused_at = max(self.refused_at, took + 1.0)

    def _raised_by_luck(self, call: Call, now: float) -> bool:
        """A call at or above the level that answered probes raised the limit to, sent
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
        if not self._on_trial(now):
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

    def _on_trial(self, now: float) -> bool:
        """The last raise above a refused level is less than ``RAISE_TRIAL`` rounds old: a
        refusal at its level would show its probes' answers were luck."""
        if self._raised is None:
            return False
        latency = self.long_latency
        return now - self._raised[1] <= RAISE_TRIAL * (
            latency if latency and math.isfinite(latency) else 1.0)

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
        self._vouches = 0
        self.probe_rounds = self._longer_probe_interval()
        self._rounds_to_probe = float(self.probe_rounds)
        return True

    def _refused_in_a_probes_place(self, call: Call) -> bool:
        """A call sent before slow start's last wave was refused, at a level the round before
        had answered, refused while some of the wave was answered and no more calls were
        refused than the wave sent: a probe reached the provider first (requests arrive in
        another order than their levels), was answered, and this call was refused in its
        place. Its level says nothing; what it says is that the wave's answers were luck, as
        for a refusal in slow start: back to where the wave began. Read as a level, it cut
        the limit to below it (traced at a cap of 32: a call at level 14, sent 4 ms before a
        wave to 48, refused after it; the limit fell from 37 to 13, took 8 s to climb back,
        and the climb went into the cap again: 58 refusals in 1,600). With no probe
        answered, or more refusals than the wave's size, they are not the wave's doing:
        another client fills the provider."""
        if (call.probe or call.started > self._crossed_at
                or call.level > self._crossing_base
                or not (self._crossing_lucky or self._crossing_base < self.limit)
                or self._crossing_refused > self._crossing_size):
            return False
        self._crossing_lucky = True
        self.limit = min(self.limit, self._crossing_base)
        self.refused_at = min(self.refused_at or math.inf, self._crossing_base + 1.0)
        self.lowest_limit = min(self.lowest_limit, self.limit)
        return True
