"""Migration 0019 (criterion order): grades stored before criterion shuffling existed move
to head as they were — every verdict kept, no prompt position — and read back through the
run's grades; a position can then be stored; and back down, the verdicts are still there."""

from __future__ import annotations

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from grading.types import Verdict
from storage.engine import open_database
from storage.repositories import runs as runs_repo
from tests.storage.test_criterion_kinds_migration import _migrate, _seed_0014
from tests.storage.test_run_samples_migration import _criteria_rows


def _columns(url: str) -> list[str]:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as c:
        columns = list(c.execute(text("SELECT * FROM grade_criteria")).keys())
    engine.dispose()
    return columns


def test_existing_verdicts_keep_no_prompt_position(backend, new_database):
    url = new_database(backend)
    _migrate(url, "0014_trial_status")
    _seed_0014(url)
    _migrate(url, "0017_run_samples")
    before = _criteria_rows(url)
    assert len(before) == 2

    _migrate(url, "0019_criterion_order")
    assert _criteria_rows(url) == before
    sessions = open_database(url)
    with sessions() as session:
        [grade] = runs_repo.grade_infos_for_run(session, 1)
    assert [(c.verdict, c.prompt_position) for c in grade.criteria] == [
        (Verdict.MET, None), (Verdict.MET, None)]
    sessions.kw["bind"].dispose()

    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as c:
        c.execute(text("UPDATE grade_criteria SET prompt_position = 2 WHERE id = 1"))
    engine.dispose()
    sessions = open_database(url)
    with sessions() as session:
        [grade] = runs_repo.grade_infos_for_run(session, 1)
    assert [c.prompt_position for c in grade.criteria] == [2, None]
    sessions.kw["bind"].dispose()

    _migrate(url, "0017_run_samples", down=True)
    assert _criteria_rows(url) == before
    assert "prompt_position" not in _columns(url)
