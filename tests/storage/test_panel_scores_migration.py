"""Migration 0032 (panel scores): a database at 0031 with panels, grades and people's
verdicts moves to head with its panels' effective scores of the reviewed responses filled
exactly as the app keeps them; downgrade removes the table only."""

from __future__ import annotations

from storage.engine import open_database
from storage.services import datasets, panel_scores, panels, reviews, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import MIXED, judge_report
from tests.storage.helpers import make_rubric, make_run
from tests.storage.migration_rows import snapshot, table_names
from tests.storage.test_criterion_kinds_migration import _migrate

TABLES = ("effective_scores", "effective_run_scores", "grades")


def test_upgrade_fills_the_panels_reviewed_scores_as_the_app_keeps_them(backend,
                                                                       new_database):
    url = new_database(backend)
    sessions = open_database(url)  # opening migrates to head
    version = make_rubric(sessions, "Mixed", MIXED)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(5)], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    criteria = version.to_criteria()
    judges = [make_run(sessions, version.id, dataset.id).id for _ in range(3)]
    for n, run_id in enumerate(judges):
        for r in responses:
            runs.record_grades(sessions, run_id, [runs.NewGrade(r.id, judge_report(
                ["MET", "Good", "formal"] if (r.id + n) % 3 else ["UNMET", "Poor", "no text"],
                criteria), 0.1)])
    made = [panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN).id,
            panels.create_panel(sessions, run_ids=judges[:2], rule="any", actor=ADMIN).id]
    for who, r in (("ana", responses[0]), ("bo", responses[2]), ("ana", responses[2])):
        reviews.set_human_verdict(sessions, actor=local_actor(who), response_id=r.id,
                                  criterion_id=version.criteria[0].id, verdict="MET")
    with sessions() as session:
        kept = panel_scores.maintained_rows(session)
    assert {(row[0], row[1]) for row in kept} == {
        (pid, r.id) for pid in made for r in (responses[0], responses[2])}
    sessions.kw["bind"].dispose()

    _migrate(url, "0031_verdict_keys", down=True)
    assert "effective_panel_scores" not in table_names(url)
    before = snapshot(url, TABLES)
    _migrate(url, "0032_panel_scores")
    assert snapshot(url, TABLES) == before
    sessions = open_database(url)
    with sessions() as session:
        assert panel_scores.maintained_rows(session) == kept
    sessions.kw["bind"].dispose()
