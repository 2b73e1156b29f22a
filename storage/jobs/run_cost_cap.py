"""Keeping a run under its cost cap: admitting responses, and stopping before the cap."""

from __future__ import annotations

import asyncio

from storage.dto import COST_CAP_STOP


class CostCapMixin:
    """The cost-cap part of ``RunExecution`` (``storage.jobs.runner``)."""

    @property
    def spent(self) -> float:
        return self.budget.spent

    def _check_cost_cap(self) -> None:
        cap = self.options.cost_cap
        if cap is not None and self.budget.reached() and self.capped is None:
            self._stop_at_cap("")

    def _stop_at_cap(self, why: str) -> None:
        self.capped = (f"{COST_CAP_STOP} (${self.options.cost_cap:g}) after spending "
                       f"${self.spent:.4f}{why}; the responses not graded yet stay pending: "
                       "launch again with a higher cap to grade them")
        self._halt("capped")

    async def _admit(self) -> bool:
        """Whether one more response may start under the cost cap (``CostBudget``): it waits
        while the responses in flight might take the run past it; when even one more would
        (at the average cost of a response so far), the run stops before the cap."""
        admitted = asyncio.ensure_future(self.budget.admit())
        if not await self._wait_halt_or(admitted) or self.halt:
            if admitted.done() and not admitted.cancelled() and admitted.result():
                self.budget.finished(None)  # admitted, never started
            return False
        if admitted.result():
            return True
        if self.capped is None:
            average = self.budget.average or 0.0
            self._stop_at_cap(f": one more response (about ${average:.4f} each) would have "
                              "gone over it" if self.budget.full else "")
        return False

    def _unpriced_cap(self) -> str | None:
        """Why a cost cap cannot be kept (no price for the model: its cost stays unknown)."""
        if self.options.cost_cap is None or self.run.settings.price is not None:
            return None
        from storage.jobs.estimate import price

        if price(self.run.model, 1000, 1000)[0] is not None:
            return None
        return (f"the cost cap (${self.options.cost_cap:g}) cannot be kept: there is no price "
                f"for {self.run.model}, so its cost stays unknown; set its price per million "
                "tokens in Settings and launch again, or launch without a cap")
