"""Migration 0017 (run samples): grades stored before samples existed move to head as they
were — every verdict kept, no samples (asked once) — and read back through the run's grades;
a grade with samples can then be stored; and back down, the verdicts are still there."""

from __future__ import annotations

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from grading.types import Verdict
from storage.engine import open_database
from storage.repositories import runs as runs_repo
from tests.storage.test_criterion_kinds_migration import _migrate, _seed_0014


def _criteria_rows(url: str) -> list[tuple]:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as c:
        rows = c.execute(text("SELECT id, grade_id, criterion_id, position, verdict, reason "
                              "FROM grade_criteria ORDER BY id")).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def test_existing_verdicts_are_kept_as_asked_once(backend, new_database):
    url = new_database(backend)
    _migrate(url, "0014_trial_status")
    _seed_0014(url)
    _migrate(url, "0016_calibration_options")
    before = _criteria_rows(url)
    assert len(before) == 2

    _migrate(url, "0017_run_samples")
    assert _criteria_rows(url) == before
    sessions = open_database(url)
    with sessions() as session:
        [grade] = runs_repo.grade_infos_for_run(session, 1)
    assert [(c.verdict, c.samples) for c in grade.criteria] == [
        (Verdict.MET, None), (Verdict.MET, None)]
    sessions.kw["bind"].dispose()

    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as c:  # the new column takes a sample list (JSON / JSONB)
        c.execute(text("UPDATE grade_criteria SET samples = :s WHERE id = 1"),
                  {"s": '["MET", "UNMET", "MET"]'})
    engine.dispose()
    sessions = open_database(url)
    with sessions() as session:
        [grade] = runs_repo.grade_infos_for_run(session, 1)
    assert grade.criteria[0].samples == ("MET", "UNMET", "MET")
    sessions.kw["bind"].dispose()

    _migrate(url, "0016_calibration_options", down=True)
    assert _criteria_rows(url) == before
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as c:
        columns = c.execute(text("SELECT * FROM grade_criteria")).keys()
    engine.dispose()
    assert "samples" not in columns
