"""Migration 0015 (criterion kinds, reference answers): a database with data from 0014 moves
to head with every rubric, grade, verdict and response as it was; and back down."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from alembic import command
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.pool import NullPool

from grading.types import Criterion, Verdict
from storage.engine import open_database
from storage.migrate import alembic_config
from storage.services import datasets, reviews, rubrics, runs

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _migrate(url: str, target: str, *, down: bool = False) -> None:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as connection:
        (command.downgrade if down else command.upgrade)(alembic_config(connection), target)
        connection.commit()
    engine.dispose()


def _seed_0014(url: str) -> None:
    """What 0014 held: a binary rubric, a response, a finished run with a grade and its
    verdicts, and a reviewer's verdict."""
    engine = create_engine(url, poolclass=NullPool)
    t = T0.replace(tzinfo=None) if engine.dialect.name == "sqlite" else T0
    with engine.begin() as c:
        c.execute(text("INSERT INTO rubrics (id, name, description, archived, created_at) "
                       "VALUES (1, 'Dosing', '', false, :t)"), {"t": t})
        c.execute(text("INSERT INTO rubric_versions (id, rubric_id, number, note, created_at, "
                       "frozen_at) VALUES (1, 1, 1, '', :t, :t)"), {"t": t})
        for cid, (name, weight) in enumerate([("accurate", 10.0), ("harmful", -5.0)], 1):
            c.execute(text("INSERT INTO criteria (id, version_id, position, name, requirement, "
                           "weight, section) VALUES (:id, 1, :p, :n, :r, :w, NULL)"),
                      {"id": cid, "p": cid - 1, "n": name, "r": f"req {name}", "w": weight})
        c.execute(text("INSERT INTO datasets (id, name, description, archived, created_at) "
                       "VALUES (1, 'Answers', '', false, :t)"), {"t": t})
        c.execute(text("INSERT INTO responses (id, dataset_id, external_id, query, output, "
                       "metadata, created_at) VALUES (1, 1, 'r1', 'q?', 'text', '{}', :t)"),
                  {"t": t})
        c.execute(text(
            "INSERT INTO grading_runs (id, name, rubric_version_id, dataset_id, grader, model, "
            "settings, status, created_at, response_count, done_count, failed_count, "
            "prompt_tokens, completion_tokens, total_tokens, cost, unknown_cost_count) VALUES "
            "(1, 'old', 1, 1, 'per_criterion', 'openai/x', :s, 'done', :t, 1, 1, 0, 0, 0, 0, "
            "0, 0)"), {"t": t, "s": '{"normalize": true, "cannot_assess": "skip"}'})
        c.execute(text(
            "INSERT INTO grades (id, run_id, response_id, score, raw_score, "
            "cannot_assess_count, created_at, transient) VALUES (1, 1, 1, 0.5, 5.0, 0, :t, "
            "false)"), {"t": t})
        for gid, (cid, verdict) in enumerate([(1, "MET"), (2, "MET")], 1):
            c.execute(text("INSERT INTO grade_criteria (id, grade_id, criterion_id, position, "
                           "verdict, reason) VALUES (:id, 1, :c, :p, :v, 'because')"),
                      {"id": gid, "c": cid, "p": cid - 1, "v": verdict})
        c.execute(text(
            "INSERT INTO human_verdicts (id, response_id, rubric_version_id, criterion_id, "
            "stream, seq, verdict, reviewer_key, reviewer, note, created_at) VALUES "
            "(1, 1, 1, 2, 'ana', 1, 'UNMET', 'ana', 'Ana', 'not harmful', :t)"), {"t": t})
        if engine.dialect.name == "postgresql":
            for table in ("rubrics", "rubric_versions", "criteria", "datasets", "responses",
                          "grading_runs", "grades", "grade_criteria", "human_verdicts"):
                c.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                               f"(SELECT max(id) FROM {table}))"))
    engine.dispose()


def test_a_0014_database_keeps_every_row_and_reads_as_binary(backend, new_database):
    url = new_database(backend)
    _migrate(url, "0014_trial_status")
    _seed_0014(url)
    _migrate(url, "0015_criterion_kinds")

    sessions = open_database(url)
    version = rubrics.get_version(sessions, 1)
    assert version.to_criteria() == [
        Criterion(name="accurate", requirement="req accurate", weight=10.0),
        Criterion(name="harmful", requirement="req harmful", weight=-5.0)]
    assert [(c.options, c.scale_type, c.required) for c in version.criteria] == [
        (None, None, False), (None, None, False)]
    [grade] = runs.list_grades(sessions, 1)
    assert (grade.score, grade.raw_score) == (0.5, 5.0)
    assert [(c.verdict, c.option, c.shuffle_order, c.choice) for c in grade.criteria] == [
        (Verdict.MET, None, None, Verdict.MET), (Verdict.MET, None, None, Verdict.MET)]
    [history] = reviews.verdict_history(sessions, 1)
    assert (history.verdict, history.option, history.choice, history.note) == (
        Verdict.UNMET, None, Verdict.UNMET, "not harmful")
    response = datasets.get_response(sessions, 1)
    assert (response.output, response.reference) == ("text", None)
    # the human verdict still changes the effective score exactly as before: harmful UNMET
    assert reviews.effective_grade(sessions, 1).score == 1.0
    sessions.kw["bind"].dispose()
    # the scale type is checked by the database, under the name the models give it
    engine = create_engine(url, poolclass=NullPool)
    with pytest.raises(IntegrityError, match=r"\bck_criteria_scale_type"), engine.begin() as c:
        c.execute(text("UPDATE criteria SET scale_type = 'likert' WHERE id = 1"))
    engine.dispose()

    _migrate(url, "0014_trial_status", down=True)
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as c:
        kept = c.execute(text("SELECT id, name, weight FROM criteria ORDER BY id")).all()
        verdicts = c.execute(text("SELECT verdict FROM grade_criteria ORDER BY id")).all()
    engine.dispose()
    assert [tuple(r) for r in kept] == [(1, "accurate", 10.0), (2, "harmful", -5.0)]
    assert [r[0] for r in verdicts] == ["MET", "MET"]
