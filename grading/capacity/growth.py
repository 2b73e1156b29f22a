"""Growth of the limit: slow start's waves of probes, the climb back below a refused level,
and the probes above it (CUBIC's plateau)."""

from __future__ import annotations

from grading.capacity.constants import FIRST_PROBE_ROUNDS, LONG_SECONDS, MAX_PROBE_ROUNDS


class Growth:
    """Waves of probes; mixed into ``CapacityEstimate``."""

    def _wave_answered(self, now: float) -> None:
        if not self._wave_refused:
            if not self._edge:
                self.step = min(self.step * 2.0, float(self.max_step))
                if self.slow_start:
                    self._answered_base = self._wave_base
            elif self._vouches:  # not yet enough in a row (_answers_to_raise): ask next round
                self._rounds_to_probe = 1.0
            else:  # answered enough times in a row above the refused level: it may have grown
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

    def _next_cap(self, now: float) -> float | None:
        """The lowest level refused in the last ``LONG_SECONDS`` above the limit: where a
        climb past a refused level stops and probes (CUBIC's W_max: what refused before
        likely refuses again)."""
        above = [level for at, level in self._refusals_seen
                 if now - at <= LONG_SECONDS and level > self.limit + 1]
        return min(above) if above else None

    def _longer_probe_interval(self) -> int:
        """Refused again at the level probed: probe half as often as before. "Before" is
        before answered probes shortened the interval: a probe can be answered above the
        provider's cap by luck (our count of calls in flight is not the provider's while
        requests wait to be sent and answers wait to be read), and doubling the shortened
        interval would, round after round, probe ever more often into the same cap."""
        return min(MAX_PROBE_ROUNDS, 2 * max(self.probe_rounds, self._probed_before))

    def _arm(self) -> None:
        """Arm the next wave of probes, if one is due: it goes when the limit is full."""
        if self._out or self._to_send or self.queue_slots is not None:
            return  # a wave is out, or the server queues what goes above the limit
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
