"""A run's cost cap (``extra.cost_cap``, set by the Grade page for a panel's members) stops
it once it spent that much: failed, saying why, with the rest pending."""

from __future__ import annotations

from storage.services import runs
from tests.actors import ADMIN
from tests.jobs.helpers import MODEL, make_dataset, make_rubric, run_now

# 1 USD per million tokens both ways: the fake provider's usage makes each grade cost > 0.
PRICE = {"input_per_million": 1.0, "output_per_million": 1.0}


def _run(sessions, api_base, cap, count=6):
    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, count)
    return runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader="per_criterion",
        model=MODEL, actor=ADMIN,
        settings={"api_base": api_base, "price": PRICE,
                  "extra": {"concurrency": 1, "cost_cap": cap, "use_cache": False}})


def test_a_run_stops_at_its_cost_cap_and_keeps_what_it_graded(sessions, fake_provider):
    run = _run(sessions, fake_provider.api_base, cap=1e-9)
    result = run_now(sessions, run.id)
    assert result.status == "failed" and "cost cap ($1e-09)" in result.error
    info = runs.get_run(sessions, run.id)
    assert 1 <= info.graded_count < 6 and info.cost > 0
    assert "launch again with a higher cap" in info.error
    assert len(runs.pending_response_ids(sessions, run.id)) == 6 - info.graded_count


def test_a_run_under_its_cap_grades_everything(sessions, fake_provider):
    run = _run(sessions, fake_provider.api_base, cap=100.0)
    assert run_now(sessions, run.id).status == "done"
    assert runs.get_run(sessions, run.id).graded_count == 6
