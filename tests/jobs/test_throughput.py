"""Throughput with no tuning: the runner finds a provider's cap, grades that failed only
transiently get later passes, and ``grade --workers 2`` splits a run between processes
without grading a response twice (real SQLite file and real PostgreSQL, real litellm HTTP
path against the local fake provider)."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import select, update

from storage import cli
from storage import models as m
from storage.services import runs
from tests.fake_provider import Reply
from tests.jobs.helpers import (
    CRITERIA,
    answers_per_response,
    make_dataset,
    make_rubric,
    make_run,
    run_now,
)
from tests.provider_process import ProviderProcess

FAST_PASSES = {"transport_retries": 1, "retry_passes": 3, "pass_delay": 0.05}


def test_a_pass_is_cut_into_chunks_that_shrink_towards_its_end(sessions, monkeypatch):
    # Several workers then finish within a small chunk of each other: with chunks of 25 to
    # the end, one graded a whole last chunk while the other had nothing left.
    from storage.jobs import chunks as chunk_store
    from storage.jobs.chunks import CHUNK_SIZE, chunk_sizes, open_chunks, plan_pass

    sizes = chunk_sizes(200)
    assert sum(sizes) == 200 and sizes[0] == CHUNK_SIZE
    assert sizes == sorted(sizes, reverse=True)
    assert max(sizes[-6:]) <= 2
    assert chunk_sizes(0) == []

    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 60)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9")
    ids = [r.id for r in responses]
    planned = plan_pass(sessions, run.id, 1, list(reversed(ids)))
    with sessions() as session:
        chunks = session.execute(select(m.RunChunkRow.first_response_id,
                                        m.RunChunkRow.last_response_id)
                                 .where(m.RunChunkRow.run_id == run.id)
                                 .order_by(m.RunChunkRow.id)).all()
    assert planned == len(chunks) == len(chunk_sizes(60))
    covered = [i for first, last in chunks for i in ids if first <= i <= last]
    assert covered == sorted(ids)  # every response in exactly one chunk, in order
    # The scaler weighs open work in chunks of 25: 60 responses are 3 of them, not the 17
    # small chunks they were cut into (a few responses left are no work for a new process).
    assert open_chunks(sessions, [run.id]) == 3
    monkeypatch.setattr(chunk_store, "CHUNK_SIZE", 1)
    assert chunk_sizes(7) == [1] * 7


@pytest.fixture(scope="module")
def provider_process():
    """The fake provider in its own process, as a provider on another machine: its count of
    calls in flight does not wait for the GIL our event loop holds."""
    provider = ProviderProcess()
    yield provider
    provider.stop()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_with_defaults_the_runner_finds_the_cap_no_grade_fails_and_429s_stay_rare(
        sessions, backend, provider_process):
    provider_process.reset(latency=0.05, cap=6)
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 80)
    run = make_run(sessions, version.id, dataset.id, provider_process.api_base,
                   use_cache=False)

    result = run_now(sessions, run.id)

    assert (result.status, result.graded, result.failed) == ("done", 80, 0)
    grades = runs.list_grades(sessions, run.id)
    assert all(g.score is not None for g in grades)
    stats = provider_process.stats()
    # It used what the provider allows (no ceiling was configured) ...
    assert stats["max_in_flight"] >= 6
    # ... and was refused rarely (a fixed 16 in flight would be refused on most calls). On a
    # quiet machine: 3-4 429s in ~243 calls (the slow-start overshoot, refused probes), and
    # 1-8 with four busy loops on the two cores. Issue 13's 2 % is held for this very
    # run (cap 6, 240 calls) with a fake clock in tests/grading/test_capacity.py; here the
    # clock is real and answers wait for our event loop, so a wave may be answered at levels
    # the provider never saw. With the provider in this process, its threads also waited
    # for our GIL to count a call as ended, and CI once counted 21 of 261 (8.05 %).
    assert stats["rate_limited"] <= 0.08 * stats["requests"], stats


def test_transient_failures_are_graded_again_in_a_later_pass(sessions, fake_provider):
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 5)
    # A bad minute: the first 14 requests fail with 503. Every call of the first pass fails
    # twice (one transport retry), four calls of the second pass fail once and then succeed.
    fake_provider.enqueue(*[Reply(status=503, error_message="overloaded")] * 14)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, use_cache=False,
                   **FAST_PASSES)

    result = run_now(sessions, run.id)

    # Two passes; a third when a busy machine adds a lost connection of its own.
    assert (result.status, result.failed) == ("done", 0) and result.passes in (2, 3)
    grades = runs.list_grades(sessions, run.id)
    assert len(grades) == 5 and all(g.score == 1.0 and g.error is None for g in grades)
    assert fake_provider.requests >= 10 + 4 + 5
    info = runs.get_run(sessions, run.id)
    assert (info.done_count, info.failed_count) == (5, 0)


def test_permanent_failures_are_never_retried(sessions, fake_provider):
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 1)
    fake_provider.enqueue(Reply(status=400, error_message="this request is malformed"))
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, use_cache=False,
                   **FAST_PASSES)

    result = run_now(sessions, run.id)

    assert (result.status, result.failed, result.passes) == ("done", 1, 1)
    assert fake_provider.requests == 1
    (grade,) = runs.list_grades(sessions, run.id)
    assert grade.score is None and "malformed" in grade.error


def test_passes_are_bounded_when_the_provider_does_not_recover(sessions, fake_provider):
    version = make_rubric(sessions, criteria=CRITERIA[:1])
    dataset, _ = make_dataset(sessions, 2)
    fake_provider.default = lambda _body: Reply(status=503, error_message="down")
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, use_cache=False,
                   **{**FAST_PASSES, "transport_retries": 0, "retry_passes": 2})

    result = run_now(sessions, run.id)

    assert (result.status, result.failed, result.passes) == ("done", 2, 3)
    assert fake_provider.requests == 2 * 3  # 2 calls, 3 passes, no transport retry
    with sessions() as session:
        flags = session.scalars(select(m.GradeRow.transient).where(
            m.GradeRow.run_id == run.id)).all()
    assert flags == [True, True]  # a requeue or a later look knows they were transient
    info = runs.get_run(sessions, run.id)
    assert (info.done_count, info.failed_count) == (0, 2)


def test_grade_with_two_workers_splits_the_run_and_never_grades_a_response_twice(
        db_url, tmp_path, fake_provider, capfd):
    count = 240
    (tmp_path / "rubric.yaml").write_text(
        "- name: accurate\n  requirement: States the dose correctly\n  weight: 10\n")
    (tmp_path / "r.csv").write_text(
        "id,query,text\n" + "".join(f"r{i},question {i},answer number {i}\n"
                                    for i in range(count)))
    # At least 30 s of work (240 calls, 4 at a time, 0.5 s each): time for the helper process
    # to start (importing litellm takes long on a busy machine) and join.
    fake_provider.latency = 0.5
    fake_provider.max_concurrency = 4

    status = cli.main(["grade", "--rubric", str(tmp_path / "rubric.yaml"), "--responses",
                       str(tmp_path / "r.csv"), "--grader", "per-criterion", "--model",
                       "openai/fake-judge", "--api-base", fake_provider.api_base, "--db", db_url,
                       "--no-cache", "--workers", "2"])

    err = capfd.readouterr().err  # the helper's too: it writes to the same stderr
    assert status == 0, err
    # The helper, stopped once the run ended, exits quietly (no traceback at the end of the
    # command's output).
    assert "Traceback" not in err and "helps with run" in err, err
    # Requests refused with a 429 were asked again; answered ones never were.
    per_response = answers_per_response(fake_provider.answered)
    assert len(per_response) == count
    assert set(per_response.values()) == {1}  # one answer per response: nobody graded twice
    from storage.engine import open_database

    sessions = open_database(db_url)
    with sessions() as session:
        run_id = session.scalar(select(m.RunRow.id))
        holders = Counter(session.scalars(select(m.RunChunkRow.claimed_by).where(
            m.RunChunkRow.run_id == run_id)).all())
    assert len(holders) == 2, holders  # both processes graded chunks of the one run
    grades = runs.list_grades(sessions, run_id)
    assert len(grades) == count and all(g.score == 1.0 for g in grades)


@pytest.mark.parametrize(("responses", "opening"), [(30, 4), (400, 12)])
def test_a_run_opens_its_limiter_as_wide_as_its_work_allows(sessions, fake_provider,
                                                            responses, opening):
    # 3 criteria a response: 90 calls open at 4 as ever; 1,200 at 12 (one per 100 waiting),
    # as the library's gathered calls do: fewer rounds of slow start for a long run.
    from grading.limiter import limiter_for

    fake_provider.latency = 0.01
    version = make_rubric(sessions)
    dataset, _rows = make_dataset(sessions, responses)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    assert run_now(sessions, run.id).status == "done"
    snapshot = limiter_for(run.model, fake_provider.api_base).snapshot()
    assert snapshot.opening_limit == opening


def test_the_owner_ends_the_run_soon_after_the_last_chunk_another_worker_held(
        sessions, fake_provider):
    # The owner, its own chunks graded, waits for a chunk another worker holds. It used to
    # look once a second, so a helper's chunk finished just after a look kept the run (and
    # `grade --workers 2`, which waits for it) running up to a second longer: a fifth of a
    # CPU-bound 1,600-call run. It now looks soon, then less and less often.
    import threading
    import time

    from grading.types import CriterionReport, EvaluationReport, Verdict
    from storage.jobs import chunks as chunk_store

    fake_provider.latency = 0.05
    version = make_rubric(sessions)
    dataset, rows = make_dataset(sessions, 12)
    # One call at a time: the owner claims chunks only as its window frees, so the last chunk
    # (two responses) is still open when the other worker takes it.
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, concurrency=1)
    outcome: dict = {}

    def owner() -> None:
        outcome["result"] = run_now(sessions, run.id, worker_id="owner")
        outcome["ended"] = time.monotonic()

    thread = threading.Thread(target=owner)
    thread.start()

    def chunk_rows():
        with sessions() as session:
            return session.execute(select(m.RunChunkRow).where(m.RunChunkRow.run_id == run.id)
                                   .order_by(m.RunChunkRow.id)).scalars().all()

    deadline = time.monotonic() + 30
    while not chunk_rows() and time.monotonic() < deadline:
        time.sleep(0.005)
    last = chunk_rows()[-1]
    with sessions.begin() as session:  # the other worker claims the last chunk
        taken = session.execute(update(m.RunChunkRow).where(
            m.RunChunkRow.id == last.id, m.RunChunkRow.status == "open").values(
            status="taken", claimed_by="other", heartbeat_at=m.utcnow())).rowcount
    assert taken == 1
    theirs = [r.id for r in rows if last.first_response_id <= r.id <= last.last_response_id]
    # The other worker grades its chunk while the owner grades its own (as a helper does),
    # and finishes the chunk later. Its grades are stored now, not once the owner waits:
    # the owner's looks grow further apart the longer it waits, and two writes under the
    # CI's load took 0.25 s, so the look after the finish came up to 0.5 s late (0.8 s seen).
    report = EvaluationReport(score=1.0, raw_score=7.0, report=[
        CriterionReport(**c.model_dump(), verdict=Verdict.MET, reason="ok") for c in CRITERIA])
    for response_id in theirs:
        runs.record_grade(sessions, run.id, response_id, report)
    while time.monotonic() < deadline and sum(
            c.status == "done" for c in chunk_rows()) < len(chunk_rows()) - 1:
        time.sleep(0.005)
    time.sleep(0.1)  # the owner has looked at the other chunk once and found it unfinished
    chunk_store.finish_chunk(sessions, last.id, "other")
    finished = time.monotonic()
    thread.join(30)

    assert outcome["result"].status == "done"
    assert outcome["ended"] - finished < 0.45  # it looked again within a fraction of a second
    assert len(runs.list_grades(sessions, run.id)) == 12
    asked = answers_per_response(fake_provider.answered)
    assert len(asked) == 10  # the owner never graded the chunk a live worker held
    theirs_asked = {f"answer number {i}" for i, r in enumerate(rows) if r.id in theirs}
    assert not theirs_asked & {text for _model, text in asked}
