"""The runner stores its grades a few per transaction (storage.jobs.grade_writer), against
real SQLite and PostgreSQL: batches, the time limit, and batches the database refuses."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import event

from grading.types import CriterionReport, EvaluationReport, Verdict
from storage.jobs.breaker import StoreBreaker
from storage.jobs.grade_writer import GradeWriter
from storage.services import runs
from tests.jobs.helpers import CRITERIA, make_dataset, make_rubric, make_run, run_now


def _report(verdict: Verdict = Verdict.MET) -> EvaluationReport:
    return EvaluationReport(score=1.0, raw_score=7.0, report=[
        CriterionReport(**c.model_dump(), verdict=verdict, reason="ok") for c in CRITERIA])


async def _write(sessions, run_id, grades, **options):
    stored, unstored = [], []
    writer = GradeWriter(sessions, run_id, StoreBreaker(),
                         on_stored=lambda grade, info: stored.append(info.response_id),
                         on_unstored=lambda grade, exc: unstored.append(grade.response_id),
                         **options)
    for grade in grades:
        writer.add(grade)
    await writer.close()
    return stored, unstored


def test_a_batch_holding_a_response_another_worker_stored_keeps_the_others(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 6)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1")
    ids = [r.id for r in responses]
    runs.record_grade(sessions, run.id, ids[2], _report())  # the other worker's
    wrong = EvaluationReport(score=1.0, report=[
        CriterionReport(requirement="Another rubric", weight=1, verdict=Verdict.MET)])

    stored, unstored = asyncio.run(_write(sessions, run.id, [
        runs.NewGrade(ids[0], _report()), runs.NewGrade(ids[1], _report(Verdict.UNMET)),
        runs.NewGrade(ids[2], _report()), runs.NewGrade(ids[3], wrong),
        runs.NewGrade(ids[4], _report()), runs.NewGrade(ids[5], _report())], batch=4))

    assert sorted(stored) == [ids[0], ids[1], ids[4], ids[5]]
    assert unstored == [ids[3]]  # the grade at fault; the duplicate is simply not ours
    grades = {g.response_id: g for g in runs.list_grades(sessions, run.id)}
    assert sorted(grades) == [ids[0], ids[1], ids[2], ids[4], ids[5]]
    assert [c.verdict for c in grades[ids[1]].criteria] == [Verdict.UNMET] * 3
    assert runs.get_run(sessions, run.id).done_count == 5


def test_a_lone_grade_is_stored_after_the_time_limit_without_a_flush(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 1)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1")
    stored = []

    async def scenario():
        writer = GradeWriter(sessions, run.id, StoreBreaker(), seconds=0.05,
                             on_stored=lambda grade, info: stored.append(info.id),
                             on_unstored=lambda grade, exc: None)
        writer.add(runs.NewGrade(responses[0].id, _report()))
        for _ in range(200):
            if stored:
                return
            await asyncio.sleep(0.02)

    asyncio.run(scenario())
    assert len(stored) == 1 and runs.pending_response_ids(sessions, run.id) == []


def test_a_run_stores_its_grades_in_a_few_transactions(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 40)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    inserts = []

    def count(_conn, _cursor, statement, *_args):
        if statement.lstrip().upper().startswith("INSERT INTO GRADES "):
            inserts.append(statement)

    engine = sessions.kw["bind"]
    event.listen(engine, "before_cursor_execute", count)
    try:
        result = run_now(sessions, run.id)
    finally:
        event.remove(engine, "before_cursor_execute", count)

    assert (result.status, result.graded) == ("done", 40)
    assert len(runs.list_grades(sessions, run.id)) == 40
    assert len(inserts) < 30, len(inserts)  # one per response before


def _store_arriving(sessions, run_id: int, responses, *, every: float, store_seconds: float,
                    **options) -> tuple[list[int], list[int]]:
    """Add a grade per response, one every ``every`` s, to a writer whose database takes
    ``store_seconds`` per transaction; close it. The sizes of the transactions, and the
    responses stored."""
    sizes: list[int] = []
    stored: list[int] = []

    async def scenario():
        writer = GradeWriter(sessions, run_id, StoreBreaker(),
                             on_stored=lambda grade, info: stored.append(info.response_id),
                             on_unstored=lambda grade, exc: None, **options)
        from storage.jobs import grade_writer

        store = grade_writer.record_grades

        def slow(sessions_, run_id_, batch):  # a slow database: grades arrive meanwhile
            sizes.append(len(batch))
            time.sleep(store_seconds)
            return store(sessions_, run_id_, batch)

        grade_writer.record_grades = slow
        try:
            for response in responses:
                writer.add(runs.NewGrade(response.id, _report()))
                await asyncio.sleep(every)
            await writer.close()
        finally:
            grade_writer.record_grades = store

    asyncio.run(scenario())
    return sizes, stored


def test_grades_arriving_while_a_batch_is_stored_wait_for_their_own_batch(sessions):
    """At a steady rate, a flush must not also drain what arrives during its own store: it
    made a chain of one-grade transactions (each costs milliseconds of the runner's CPU)."""
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 24)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1")

    # one grade every 50 ms, for 1.2 s
    sizes, _ = _store_arriving(sessions, run.id, responses, every=0.05, store_seconds=0.12,
                               seconds=0.3)

    assert sum(sizes) == 24 and len(runs.list_grades(sessions, run.id)) == 24
    # About 0.3 s of grades per transaction (~5 batches), not a batch per store's worth of
    # arrivals (2 or 3 grades: ~9 batches).
    assert len(sizes) <= 6, sizes


def test_a_backlog_is_stored_in_full_batches_not_a_flush_per_grade(sessions):
    """Grades arriving faster than the database stores them: one flush at a time takes what
    is queued when it starts, in full batches. A flush started for every grade added while
    a batch's worth waited stored one grade each (traced CPU-bound, 200 x 8: 102
    transactions for 200 grades)."""
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 40)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1")

    # 4 grades per 0.1 s stored; they arrive at 100 a second
    sizes, stored = _store_arriving(sessions, run.id, responses, every=0.01,
                                    store_seconds=0.1, batch=4, seconds=5.0)

    assert sorted(stored) == sorted(r.id for r in responses)
    assert len(runs.list_grades(sessions, run.id)) == 40
    assert sum(sizes) == 40
    assert len(sizes) <= 11, sizes  # 10 full batches (a last partial one at most)


def test_an_unexpected_error_in_a_flush_is_logged_and_later_grades_are_still_stored(
        sessions, caplog):
    # Database faults are handled in _store; anything else escaping a flush of the writer's
    # own (here the runner's callback) is logged, and the writer goes on storing.
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 4)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1")
    seen = []

    def on_stored(grade, info):
        seen.append(info.response_id)
        if len(seen) == 1:
            raise RuntimeError("a bug in the callback")

    async def scenario():
        writer = GradeWriter(sessions, run.id, StoreBreaker(), batch=2, seconds=60,
                             on_stored=on_stored, on_unstored=lambda grade, exc: None)
        for response in responses[:2]:
            writer.add(runs.NewGrade(response.id, _report()))  # a full batch: flushed
        for _ in range(200):
            if not writer._tasks:
                break
            await asyncio.sleep(0.01)
        for response in responses[2:]:
            writer.add(runs.NewGrade(response.id, _report()))
        await writer.close()

    asyncio.run(scenario())
    assert f"storing grades of run {run.id} failed" in caplog.text
    assert "a bug in the callback" in caplog.text
    assert sorted(g.response_id for g in runs.list_grades(sessions, run.id)) == sorted(
        r.id for r in responses)
    assert seen[-2:] == [r.id for r in responses[2:]]  # the later batch went through in full
