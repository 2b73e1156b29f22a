"""What ``grade`` holds in memory does not grow with the rows, on SQLite and PostgreSQL:
creating a run over a dataset never sends every id in one statement, and exporting a run
reads its grades a page at a time. (The memory itself is measured by
benchmarks/grade_memory.py, not here.)"""

from __future__ import annotations

import contextlib

from sqlalchemy import event, select

from grading.types import ScoringSettings, Verdict
from storage import exports
from storage import models as m
from storage.jobs import chunks
from storage.repositories.runs import ID_BATCH
from storage.services import datasets, runs
from tests.storage.helpers import ADMIN, CRITERIA, judge_report, make_rubric

M, U = Verdict.MET, Verdict.UNMET
ROWS = ID_BATCH * 2 + 500


@contextlib.contextmanager
def statements(sessions):
    """Every statement sent to the database meanwhile: (SQL, number of parameter sets)."""
    seen: list[tuple[str, int]] = []
    engine = sessions.kw["bind"]

    def record(_conn, _cursor, statement, parameters, _context, executemany):
        seen.append((statement, len(parameters) if executemany else 1))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def _dataset(sessions, rows: int = ROWS):
    version = make_rubric(sessions)
    dataset = datasets.create_dataset(sessions, "Many", responses=(
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(rows)), actor=ADMIN)
    return version, dataset


def test_a_run_over_a_whole_dataset_is_copied_by_the_database_not_through_memory(sessions):
    version, dataset = _dataset(sessions)
    with statements(sessions) as seen:
        run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                              grader="per_criterion", model="openai/judge", actor=ADMIN)
    assert run.response_count == ROWS
    assert len(runs.pending_response_ids(sessions, run.id)) == ROWS
    assert max(n for _sql, n in seen) <= ID_BATCH  # before: one statement of ROWS rows


def test_a_run_over_chosen_responses_is_written_in_slices(sessions):
    version, dataset = _dataset(sessions)
    ids = datasets.response_keys(sessions, dataset.id)
    chosen = sorted(ids)[1:]  # all but one
    with statements(sessions) as seen:
        run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                              grader="per_criterion", model="openai/judge", actor=ADMIN,
                              response_ids=chosen)
    assert run.response_count == ROWS - 1
    assert runs.pending_response_ids(sessions, run.id) == chosen
    assert max(n for _sql, n in seen) <= ID_BATCH
    # and the same work asked again is the same run (the duplicate check still holds)
    again = runs.launch_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader="per_criterion", model="openai/judge", actor=ADMIN,
                            response_ids=chosen)
    assert again.run.id == run.id and not again.created
    whole = runs.launch_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader="per_criterion", model="openai/judge", actor=ADMIN)
    assert whole.created and whole.run.response_count == ROWS
    whole_again = runs.launch_run(sessions, rubric_version_id=version.id,
                                  dataset_id=dataset.id, grader="per_criterion",
                                  model="openai/judge", actor=ADMIN)
    assert whole_again.run.id == whole.run.id and not whole_again.created


def test_the_export_reads_a_run_s_grades_a_page_at_a_time(sessions):
    version, dataset = _dataset(sessions, rows=1200)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/judge", actor=ADMIN)
    report = judge_report(CRITERIA, [M, U, M, U], ScoringSettings(), "answer")
    pending = runs.pending_response_ids(sessions, run.id)
    for start in range(0, len(pending), 400):
        runs.record_grades(sessions, run.id, [runs.NewGrade(rid, report, 0.1)
                                              for rid in pending[start:start + 400]])
    with statements(sessions) as seen:
        records = exports.iter_result_records(sessions, [run.id])
        first = next(records)
    assert first["workbench_response_id"] == pending[0]
    on_grades = [sql for sql, _n in seen if "FROM grades" in sql]
    assert on_grades
    # every read of the grades is bounded (a page of ids, or the ids of one page)
    assert all("LIMIT" in sql or " IN (" in sql for sql in on_grades), on_grades
    assert sum(1 for _ in records) == 1199  # and the rest follows, page by page


def _chunks(sessions, run_id):
    with sessions() as session:
        return [tuple(row) for row in session.execute(
            select(m.RunChunkRow.pass_no, m.RunChunkRow.first_response_id,
                   m.RunChunkRow.last_response_id, m.RunChunkRow.status)
            .where(m.RunChunkRow.run_id == run_id).order_by(m.RunChunkRow.id))]


def test_the_runner_plans_its_chunks_from_the_database_a_page_at_a_time(sessions):
    """The chunks are those of the whole list of pending ids (chunk_sizes), but the ids are
    read a page at a time: no statement returns more than a page of them."""
    version, dataset = _dataset(sessions, rows=chunks._ID_PAGE + 1700)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/judge", actor=ADMIN)
    report = judge_report(CRITERIA, [M, U, M, U], ScoringSettings(), "answer")
    pending = runs.pending_response_ids(sessions, run.id)
    runs.record_grades(sessions, run.id, [runs.NewGrade(rid, report, 0.1)
                                          for rid in pending[10:900:3]])
    still = runs.pending_response_ids(sessions, run.id)
    chunks.plan_pass(sessions, run.id, 1, still)  # the whole list at once, as a reference
    expected = _chunks(sessions, run.id)
    with statements(sessions) as seen:
        made = chunks.plan_pending(sessions, run.id, 1)
    assert made == len(expected) and _chunks(sessions, run.id) == expected
    assert sum(1 for sql, _n in seen if "LIMIT" in sql and "run_responses" in sql) >= 2
    assert max(n for _sql, n in seen) <= 1000
