"""Concurrent writers on real connections: no verdict, grade or count is lost or doubled."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from grading.types import EvaluationReport, TokenUsage
from storage.errors import GradeExistsError, InvalidStateError, StaleVerdictError
from storage.services import review_queue, reviews, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import make_dataset, make_rubric, make_run

WRITERS = 6


def _together(count: int, work: Callable[[int], object]) -> list[object]:
    """Run ``work(i)`` in ``count`` threads released at the same moment; exceptions returned."""
    barrier = threading.Barrier(count)

    def run(i: int) -> object:
        barrier.wait()
        try:
            return work(i)
        except Exception as exc:  # collected and asserted on by the test
            return exc

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def test_concurrent_saves_of_one_reviewer_all_land_in_one_chain(sessions):
    """One reviewer in several windows: every save lands, in one linear history."""
    version = make_rubric(sessions)
    _, [response, *_] = make_dataset(sessions)
    criterion = version.criteria[0]

    results = _together(WRITERS, lambda i: reviews.set_human_verdict(
        sessions, response_id=response.id, criterion_id=criterion.id,
        verdict="MET" if i % 2 else "UNMET", actor=local_actor("ana"), note=f"window {i}"))

    assert not [r for r in results if isinstance(r, Exception)], results
    history = reviews.verdict_history(sessions, response.id)
    assert sorted(h.note for h in history) == sorted(f"window {i}" for i in range(WRITERS))
    # one linear chain: each verdict replaces the one before it, none is skipped
    assert [h.seq for h in history] == list(range(1, WRITERS + 1))
    assert [h.replaces_id for h in history] == [None, *[h.id for h in history[:-1]]]
    assert [h.previous_verdict for h in history[1:]] == [h.verdict for h in history[:-1]]
    current = reviews.current_verdicts(sessions, response.id, version.id)[criterion.id]
    assert current == history[-1]


def test_concurrent_reviewers_each_keep_their_own_verdict(sessions):
    version = make_rubric(sessions)
    _, [response, *_] = make_dataset(sessions)
    criterion = version.criteria[0]

    results = _together(WRITERS, lambda i: reviews.set_human_verdict(
        sessions, response_id=response.id, criterion_id=criterion.id, verdict="MET",
        actor=local_actor(f"reviewer{i}")))

    assert not [r for r in results if isinstance(r, Exception)], results
    history = reviews.verdict_history(sessions, response.id)
    assert sorted(h.reviewer for h in history) == sorted(f"reviewer{i}" for i in range(WRITERS))
    assert {h.seq for h in history} == {1}
    [decision] = review_queue.response_detail(sessions, response.id, version.id).humans.values()
    assert decision.status == "agreed" and len(decision.reviews) == WRITERS


def test_hundreds_of_saves_without_a_form_check_all_land(sessions):
    """Issue 10.16: 320 saves on one criterion of one reviewer, 8 at a time, none refused
    (retry with backoff, bounded by time rather than by a count of attempts)."""
    version = make_rubric(sessions)
    _, [response, *_] = make_dataset(sessions)
    criterion = version.criteria[1]
    threads, each = 8, 40

    def work(i: int) -> list[object]:
        done = []
        for n in range(each):
            try:
                done.append(reviews.set_human_verdict(
                    sessions, response_id=response.id, criterion_id=criterion.id,
                    verdict="MET" if n % 2 else "UNMET", actor=local_actor("ana"),
                    note=f"{i}-{n}"))
            except Exception as exc:  # collected and asserted on
                done.append(exc)
        return done

    results = [r for batch in _together(threads, work) for r in batch]
    assert not [r for r in results if isinstance(r, Exception)], [
        r for r in results if isinstance(r, Exception)][:3]
    history = reviews.verdict_history(sessions, response.id)
    assert len(history) == threads * each
    assert [h.seq for h in history] == list(range(1, threads * each + 1))


def test_concurrent_saves_from_the_same_stale_form_let_exactly_one_through(sessions):
    version = make_rubric(sessions)
    _, [response, *_] = make_dataset(sessions)
    criterion = version.criteria[2]
    shown = reviews.set_human_verdict(sessions, response_id=response.id,
                                      criterion_id=criterion.id, verdict="MET",
                                      actor=local_actor("ana"))

    # the same reviewer's stale form, submitted from several windows at once
    results = _together(WRITERS, lambda i: reviews.set_human_verdict(
        sessions, response_id=response.id, criterion_id=criterion.id, verdict="UNMET",
        actor=local_actor("ana"), note=f"window {i}", expected_current_id=shown.id))

    saved = [r for r in results if not isinstance(r, Exception)]
    stale = [r for r in results if isinstance(r, StaleVerdictError)]
    assert len(saved) == 1 and len(stale) == WRITERS - 1, results
    assert all(s.current_id == saved[0].id for s in stale)
    assert len(reviews.verdict_history(sessions, response.id)) == 2


def test_concurrent_grades_keep_exact_totals_and_no_duplicates(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=WRITERS)
    run = make_run(sessions, version.id, dataset.id)
    report = EvaluationReport(
        score=0.5, raw_score=1.0, completion_cost=0.25,
        token_usage=TokenUsage(prompt_tokens=7, completion_tokens=3, total_tokens=10))

    results = _together(WRITERS * 2, lambda i: runs.record_grade(
        sessions, run.id, responses[i % WRITERS].id, report, latency_s=0.1))

    duplicates = [r for r in results if isinstance(r, GradeExistsError)]
    assert len(duplicates) == WRITERS, results
    assert len(runs.list_grades(sessions, run.id)) == WRITERS
    totals = runs.get_run(sessions, run.id)
    assert (totals.done_count, totals.total_tokens, totals.cost) == (
        WRITERS, 10 * WRITERS, 0.25 * WRITERS)
    assert runs.pending_response_ids(sessions, run.id) == []


def test_a_run_ends_once_when_two_writers_end_it_at_the_same_moment(sessions):
    """The worker finishing a run and a person cancelling it, at the same moment: one wins,
    the other is told the run already ended — never both "succeeding" with the last write
    silently replacing the first (SQLite reads outside a write lock unless one is taken)."""
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions)
    for attempt in range(12):
        run = make_run(sessions, version.id, dataset.id)
        runs.start_run(sessions, run.id)

        results = _together(2, lambda i, run_id=run.id: (
            runs.finish_run(sessions, run_id) if i == 0
            else runs.cancel_run(sessions, run_id, actor=ADMIN)))

        ended = [r for r in results if not isinstance(r, Exception)]
        assert len(ended) == 1, (attempt, results)
        assert all(isinstance(r, InvalidStateError) for r in results
                   if isinstance(r, Exception)), results
        assert runs.get_run(sessions, run.id).status == ended[0].status
