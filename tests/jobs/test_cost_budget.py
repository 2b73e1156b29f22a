"""``storage.jobs.cost_budget.CostBudget``: work starts only while it fits under the cap."""

from __future__ import annotations

import asyncio

import pytest

from storage.jobs.cost_budget import CostBudget


async def test_without_a_cap_everything_starts():
    budget = CostBudget(None)
    assert all([await budget.admit() for _ in range(100)])
    assert budget.in_flight == 100


async def test_the_first_unit_goes_alone_then_as_many_as_fit_at_the_average_cost():
    budget = CostBudget(1.0)
    assert await budget.admit()
    second = asyncio.ensure_future(budget.admit())
    await asyncio.sleep(0)
    assert not second.done()  # nothing is known of the cost yet: one at a time
    budget.finished(0.25)
    assert await second
    # $0.25 spent, one in flight at $0.25: two more fit ($1.00), a third does not yet.
    assert await budget.admit() and await budget.admit()
    fourth = asyncio.ensure_future(budget.admit())
    await asyncio.sleep(0)
    assert not fourth.done()
    for _ in range(3):
        budget.finished(0.25)
    # $1.00 spent: the cap is reached, nothing more starts.
    assert await fourth is False
    assert budget.reached() and not budget.full


async def test_when_not_even_one_more_fits_it_stops_short_of_the_cap():
    budget = CostBudget(1.0, spent=0.5)  # spent before this process took the run over
    assert await budget.admit()
    budget.finished(0.4)
    assert budget.spent == pytest.approx(0.9)
    assert await budget.admit() is False  # another $0.40 would make $1.30
    assert budget.full and not budget.reached()


async def test_a_unit_that_cost_nothing_known_does_not_teach_an_average():
    budget = CostBudget(1.0)
    assert await budget.admit()
    budget.finished(None)  # failed before any call was paid
    assert budget.average is None and budget.in_flight == 0
    assert await budget.admit()  # again one at a time


async def test_work_taken_up_again_starts_from_the_average_it_already_paid():
    budget = CostBudget(1.0, spent=0.9, done=3)  # a requeued run: 3 responses, $0.90
    assert budget.average == pytest.approx(0.3)
    assert await budget.admit() is False and budget.full  # $1.20 would pass the cap
    fresh = CostBudget(1.0, spent=0.9)  # paid, but for nothing counted: nothing to go by
    assert fresh.average is None and await fresh.admit()
