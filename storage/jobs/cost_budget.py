"""Keeping a cost cap: work starts only while it fits under the cap.

Checking the money spent after each answer lets everything already in flight run past the
cap (a run keeps a window of responses in flight, a trial eight calls): paid for, and with a
cap of $1 a run could spend $2. Here a unit of work (a response, a trial's call) starts only
if the spent money, plus the units in flight and this one at the average cost of a finished
unit, stays under the cap; near the cap it waits for those in flight to be counted; when not
even one more fits, the work stops there. Until a unit has finished (its cost is the only
measure there is), units start one at a time; work taken up again (a requeued run, a retried
trial) starts from the average of what it already paid for.
"""

from __future__ import annotations

import asyncio


class CostBudget:
    """``cap`` None: no cap, ``admit`` always says yes. ``spent``: paid before this process
    took the work over (a requeued run's cost so far), for ``done`` units."""

    def __init__(self, cap: float | None, spent: float = 0.0, done: int = 0):
        self.cap = cap
        self.spent = spent
        self.in_flight = 0
        self.full = False  # not even one more unit fits: stopped before the cap
        self._cost = spent if done and spent else 0.0
        self._measured = done if done and spent else 0
        self._changed = asyncio.Event()

    @property
    def average(self) -> float | None:
        """The mean cost of a finished unit that cost anything (None: none yet)."""
        return self._cost / self._measured if self._measured else None

    def reached(self) -> bool:
        return self.cap is not None and self.spent >= self.cap

    async def admit(self) -> bool:
        """Wait until one more unit fits; False: it never will (the cap is reached, or the
        next unit would go over it: ``full``)."""
        while self.cap is not None:
            if self.reached():
                return False
            average = self.average
            if average is None:
                if self.in_flight == 0:
                    break  # the first unit goes alone: its cost is the measure
            elif self.spent + (self.in_flight + 1) * average <= self.cap:
                break
            elif self.in_flight == 0:
                self.full = True
                return False
            self._changed.clear()
            await self._changed.wait()  # a unit in flight finishes: its cost is known
        self.in_flight += 1
        return True

    def finished(self, cost: float | None) -> None:
        """An admitted unit ended; ``cost`` what it cost (None or 0: nothing known)."""
        self.in_flight = max(0, self.in_flight - 1)
        if cost:
            self.spent += cost
            self._cost += cost
            self._measured += 1
        self._changed.set()
