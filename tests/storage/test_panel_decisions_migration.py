"""Migration 0023 (panel decisions): a database at 0021 with panels (one stored before the
one tie rule) and their members' grades moves to head with every row as it was, and its
panels' decisions filled exactly as the app keeps them: the rows the app had written, a
rebuild's rows, and the recomputation's grades; downgrade removes the two tables only."""

from __future__ import annotations

import random

from storage.engine import open_database
from storage.services import datasets, panel_upkeep, panels, runs
from tests.actors import ADMIN
from tests.storage.helpers import make_rubric, make_run
from tests.storage.migration_rows import snapshot, table_names
from tests.storage.test_criterion_kinds_migration import _migrate
from tests.storage.test_panel_decisions import CRITERIA, _report
from tests.storage.test_panels import stored_before_the_tie_rule

TABLES = ("judge_panels", "grades", "grade_criteria", "grading_runs")


def test_upgrade_fills_every_panels_decisions_as_the_app_keeps_them(backend, new_database):
    url = new_database(backend)
    sessions = open_database(url)  # opening migrates to head
    rng = random.Random(7)
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(6)], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    judges = [make_run(sessions, version.id, dataset.id).id for _ in range(3)]
    for run_id in judges:
        for response in responses[: 5 if run_id == judges[2] else 6]:
            runs.record_grade(sessions, run_id, response.id, _report(rng))
    old = panels.create_panel(sessions, run_ids=judges[:2], rule="majority", actor=ADMIN)
    stored_before_the_tie_rule(sessions, old.id)
    panel_upkeep.rebuild_panels(sessions, actor=ADMIN)
    new = panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN)
    with sessions() as session:
        kept = panel_upkeep.maintained_rows(session)
    expected = {pid: panels.recomputed_grades(sessions, pid) for pid in (old.id, new.id)}
    assert {("grade", old.id, "lower_score"), ("grade", new.id, "undecided")} <= {
        (row[0], row[1], row[-1]) for row in kept}
    sessions.kw["bind"].dispose()

    _migrate(url, "0021_pair_reviews", down=True)
    assert not {"panel_verdicts", "panel_grades"} & table_names(url)
    before = snapshot(url, TABLES)
    _migrate(url, "0023_panel_decisions")
    assert snapshot(url, TABLES) == before
    sessions = open_database(url)
    with sessions() as session:
        assert panel_upkeep.maintained_rows(session) == kept
    for pid, grades in expected.items():
        assert panels.panel_grades(sessions, pid) == grades
    assert panel_upkeep.rebuild_panels(sessions, actor=ADMIN)[1] == 0
    sessions.kw["bind"].dispose()

