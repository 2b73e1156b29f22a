"""Migration 0016 (calibration options): a calibrated run's recorded examples from 0015 move
to head as they were — MET/UNMET examples with no option — and the run still loads and shows
the same examples; and back down."""

from __future__ import annotations

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from grading.types import Verdict
from storage.engine import open_database
from storage.services import calibration
from tests.storage.test_criterion_kinds_migration import _migrate, _seed_0014


def _calibrate_run_1(url: str) -> None:
    """0015's run 1 made calibrated, with a recorded example: the 0014 reviewer's verdict."""
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as c:
        c.execute(text("UPDATE grading_runs SET settings = :s WHERE id = 1"),
                  {"s": '{"normalize": true, "cannot_assess": "skip", '
                        '"calibration": {"k": 1, "seed": 0}}'})
        c.execute(text(
            "INSERT INTO run_examples (id, run_id, criterion_id, response_id, role, position, "
            "verdict, reason, status, carried_from, human_verdict_id) VALUES "
            "(1, 1, 2, 1, 'example', 0, 'UNMET', 'not harmful', 'agreed', NULL, 1)"))
    engine.dispose()


def test_recorded_examples_keep_every_row_and_load_as_met_unmet(backend, new_database):
    url = new_database(backend)
    _migrate(url, "0014_trial_status")
    _seed_0014(url)
    _migrate(url, "0015_criterion_kinds")
    _calibrate_run_1(url)
    _migrate(url, "0016_calibration_options")

    sessions = open_database(url)
    [example] = calibration.list_run_examples(sessions, 1)
    assert (example.verdict, example.option, example.reason, example.role) == (
        "UNMET", None, "not harmful", "example")
    loaded = calibration.load_examples(sessions, 1)
    [shown] = loaded.sets[1].examples
    assert (shown.choice, shown.option, shown.output) == (Verdict.UNMET, None, "text")
    sessions.kw["bind"].dispose()

    _migrate(url, "0015_criterion_kinds", down=True)
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as c:
        kept = c.execute(text("SELECT run_id, criterion_id, verdict, reason FROM "
                              "run_examples")).all()
        columns = c.execute(text("SELECT * FROM run_examples")).keys()
    engine.dispose()
    assert [tuple(r) for r in kept] == [(1, 2, "UNMET", "not harmful")]
    assert "option" not in columns
