"""Issue 40.12: capacity sharing that keeps failing says so in one line a minute, never with a
traceback every sync (it did every 2 s, for as long as a run lasted)."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import text

from storage.services import runs
from tests.jobs.helpers import make_dataset, make_rubric, make_run, run_now


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_failing_capacity_share_is_one_line_and_the_run_goes_on(sessions, fake_provider,
                                                                  caplog):
    fake_provider.latency = 0.4
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 12)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, concurrency=1)
    with sessions.begin() as session:  # every sync now fails in the real database
        session.execute(text("ALTER TABLE endpoint_capacity RENAME TO gone"))
    with caplog.at_level(logging.WARNING):
        run_now(sessions, run.id)
    assert runs.get_run(sessions, run.id).status == "done"
    shared = [r for r in caplog.records if "could not share the capacity" in r.getMessage()]
    assert len(shared) == 1, [r.getMessage() for r in shared]
    assert shared[0].exc_info is None
    assert "no such table" in shared[0].getMessage()
