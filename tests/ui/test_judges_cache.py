"""The Judges page rereads nothing heavy on a rerun: panels' grades, member agreement and the
trial's plan come from readers keyed by a stamp, and a new human verdict moves the stamp."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from streamlit.testing.v1 import AppTest

from storage.services import panels, reviews
from tests.actors import ADMIN
from tests.ui.pages import APP, texts
from tests.ui.seed import seed_graded


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


@pytest.fixture
def statements():
    """Every SQL statement any engine runs while the test listens."""
    seen: list[str] = []

    def record(_conn, _cursor, statement, *_args):
        seen.append(statement)

    event.listen(Engine, "before_cursor_execute", record)
    yield seen
    event.remove(Engine, "before_cursor_execute", record)


def test_a_rerun_reads_no_grades_until_a_verdict_moves_the_stamp(statements):
    seeded = seed_graded(4)
    panels.create_panel(seeded.sessions, run_ids=[r.id for r in seeded.runs],
                        rule="majority", actor=ADMIN)
    accurate = seeded.version.criteria[0]
    reviews.set_human_verdict(seeded.sessions, response_id=seeded.responses[0].id,
                              criterion_id=accurate.id, verdict="MET", actor=ADMIN)
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer_name"] = "Ada"
    at.run()
    at.switch_page("app_pages/judges.py")
    at.run()
    assert not at.exception, at.exception
    assert "1 reviewed responses" in texts(at)
    assert any("grade_criteria" in s for s in statements)  # the first run computed them

    statements.clear()
    at.run()  # a rerun: any widget, or the trial fragment's poll
    assert not at.exception, at.exception
    heavy = [s for s in statements if "grade_criteria" in s]
    assert heavy == [], heavy[:2]

    reviews.set_human_verdict(seeded.sessions, response_id=seeded.responses[1].id,
                              criterion_id=accurate.id, verdict="UNMET", actor=ADMIN)
    time.sleep(2.2)  # the stamps are read at most every 2 s
    at.run()
    assert "2 reviewed responses" in texts(at)
