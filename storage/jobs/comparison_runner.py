"""Judging a comparison's pairs (storage.services.comparisons) with a PairwiseGrader.

The provider calls go through the job runner's ``JobGenerate``: the same response cache
(keyed by the request, whose prompt shows the two responses in order, so an answer is kept
per ORDERED pair: swapping A and B is another key), the endpoint's shared limiter, and the
fatal-error check (a refused key stops the comparison). Pairs are stored a batch at a time;
``run_comparison`` resumes: it judges only the pairs still pending (and, by default, the
ones that failed before), so an interrupted comparison loses at most one batch, and the
answers of that batch the provider gave are in the cache. A cancel is seen between batches.
Workers pick queued comparisons up by themselves (storage.jobs.comparison_queue), the
app's in-process one included, and Resume queues one again for them
(``comparison_queue.requeue_comparison``); ``start_in_background`` is for a process whose
worker could not start, and a command-line or test caller awaits ``run_comparison``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import update

from grading.errors import RubricWorkbenchError
from grading.llm import LiteLLMGenerate
from grading.pairwise import PairwiseGrader
from grading.pairwise.calibration import PairExamples
from grading.pairwise.report import PairReport
from storage import models as m
from storage.convert import criterion_info
from storage.engine import SessionFactory
from storage.errors import InvalidStateError
from storage.jobs import cache as cache_store
from storage.jobs.calls import Counters, JobGenerate, missing_credentials
from storage.jobs.limiter import limiter_for
from storage.repositories import comparisons as repo
from storage.repositories import rubrics as rubric_repo
from storage.services import pair_calibration
from storage.services.comparisons import ComparisonInfo, get_comparison
from storage.services.reviewers import Actor, Role, require

log = logging.getLogger(__name__)

BATCH = 16  # pairs judged together and stored in one transaction
STALE_SECONDS = 60.0  # a running comparison whose holder is silent this long may be taken over


class ComparisonBusyError(InvalidStateError):
    """Another process is judging this comparison right now."""


@dataclass(frozen=True)
class _Work:
    model: str
    settings: dict[str, Any]
    holistic: bool
    criteria: list[tuple[int | None, Any]]  # (criterion id, Criterion) in order
    pending: list[tuple[int, str | None, Any, Any]]  # (pair id, query, a text, b text)
    examples: PairExamples | None = None  # pairs people decided (calibration)


def _text(row: m.ResponseRow) -> dict[str, str]:
    return {"thinking": row.thinking or "", "output": row.output}


def _claim(sessions: SessionFactory, comparison_id: int, worker: str, take_over_after: float,
           retry_failed: bool) -> _Work | None:
    with sessions.begin() as session:
        row = repo.get(session, comparison_id, for_update=True)
        if row.status in ("cancelled", "done") and not (retry_failed and row.status == "done"
                                                        and row.failed_count):
            return None
        now = m.utcnow()
        if (row.status == "running" and row.claimed_by not in (None, worker)
                and row.heartbeat_at is not None
                and now - row.heartbeat_at < timedelta(seconds=take_over_after)):
            raise ComparisonBusyError(
                f"comparison {comparison_id} is being judged by another process; wait for it, "
                "or cancel it first")
        counts: dict[str, int] = {}
        if retry_failed and repo.reset_failed(session, comparison_id):
            # the retried pairs count again as they are stored, not twice
            states = repo.count_states(session, comparison_id)
            counts = {"done_count": states.get("done", 0), "failed_count": 0}
        session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == comparison_id)
                        .values(status="running", claimed_by=worker, heartbeat_at=now,
                                error=None, finished_at=None,
                                started_at=row.started_at or now, **counts))
        criteria = [(c.id, criterion_info(c).to_criterion())
                    for c in rubric_repo.criteria_of(session, row.rubric_version_id)]
        pending = [(pair_id, query, _text(a), _text(b))
                   for pair_id, query, a, b in repo.pending_pairs(session, comparison_id)]
        examples = pair_calibration.examples_for(session, row.settings,
                                                 [c for _, c in criteria], row.holistic)
        return _Work(row.model, dict(row.settings or {}), row.holistic, criteria, pending,
                     examples)


def _preference_rows(pair_id: int, report: PairReport,
                     criteria: list[tuple[int | None, Any]], holistic: bool) -> list[dict]:
    ids = [None] if holistic else [cid for cid, _ in criteria]
    return [{"pair_id": pair_id, "criterion_id": cid, "position": n, "first": p.first,
             "second": p.second, "first_reason": p.first_reason,
             "second_reason": p.second_reason, "preference": p.preference,
             "consistent": p.consistent, "error": p.error}
            for n, (cid, p) in enumerate(zip(ids, report.preferences, strict=True))]


def _store(sessions: SessionFactory, comparison_id: int, worker: str, work: _Work,
           outcomes: list[tuple[int, PairReport | BaseException]]) -> bool:
    """Store a batch; False (nothing stored) when the comparison was cancelled meanwhile."""
    with sessions.begin() as session:
        row = repo.get(session, comparison_id, for_update=True)
        if row.status != "running" or row.claimed_by != worker:
            return False
        now = m.utcnow()
        done = failed = unknown = 0
        cost = 0.0
        for pair_id, outcome in outcomes:
            values: dict[str, Any] = {"judged_at": now}
            if isinstance(outcome, BaseException):
                values |= {"state": "failed", "error": str(outcome) or type(outcome).__name__}
                failed += 1
            else:
                repo.insert_preferences(session, _preference_rows(
                    pair_id, outcome, work.criteria, work.holistic))
                state = "done" if outcome.winner is not None else "failed"
                values |= {"state": state, "score": outcome.score, "winner": outcome.winner,
                           "inconsistent_count": outcome.inconsistent_count,
                           "error": outcome.error, "calls": outcome.calls,
                           "cost": outcome.completion_cost}
                done += state == "done"
                failed += state == "failed"
                if outcome.completion_cost is None:
                    unknown += 1
                else:
                    cost += outcome.completion_cost
            repo.set_pair(session, pair_id, values)
        session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == comparison_id)
                        .values(done_count=m.ComparisonRow.done_count + done,
                                failed_count=m.ComparisonRow.failed_count + failed,
                                cost=m.ComparisonRow.cost + cost,
                                unknown_cost_count=m.ComparisonRow.unknown_cost_count + unknown,
                                heartbeat_at=now))
        return True


def _finish(sessions: SessionFactory, comparison_id: int, worker: str,
            fatal: str | None) -> None:
    with sessions.begin() as session:
        row = repo.get(session, comparison_id, for_update=True)
        if row.status != "running" or row.claimed_by != worker:
            return
        states = repo.count_states(session, comparison_id)
        failed, done = states.get("failed", 0), states.get("done", 0)
        if fatal:
            status, error = "failed", fatal
        elif states.get("pending"):
            status, error = "failed", "stopped before every pair was judged; start it again"
        elif failed and not done:
            status, error = "failed", f"no pair could be compared ({failed} failed)"
        else:
            status = "done"
            error = (f"{failed} of {failed + done} pairs could not be compared; start it "
                     "again to retry them") if failed else None
        session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == comparison_id)
                        .values(status=status, error=error, finished_at=m.utcnow(),
                                claimed_by=None, done_count=done, failed_count=failed))


async def run_comparison(
    sessions: SessionFactory, comparison_id: int, *, actor: Actor,
    worker: str | None = None, use_cache: bool = True, retry_failed: bool = True,
    take_over_after: float = STALE_SECONDS, batch: int = BATCH, **grader_options: Any,
) -> ComparisonInfo:
    """Judge the comparison's pending pairs (and its failed ones, ``retry_failed``) and
    store them; returns the comparison as it ended. ``grader_options`` go to PairwiseGrader
    (retry delays, say)."""
    require(actor, Role.ADMIN, "run a comparison")
    worker = worker or f"comparison-{uuid.uuid4().hex[:12]}"
    work = await asyncio.to_thread(_claim, sessions, comparison_id, worker, take_over_after,
                                   retry_failed)
    if work is None:
        return await asyncio.to_thread(get_comparison, sessions, comparison_id)
    api_base = work.settings.get("api_base")
    problem = missing_credentials(work.model, api_base)
    if problem:
        await asyncio.to_thread(_finish, sessions, comparison_id, worker, problem)
        return await asyncio.to_thread(get_comparison, sessions, comparison_id)
    fatal: list[str] = []
    timeout = float(work.settings.get("timeout") or 60.0)
    llm = LiteLLMGenerate(work.model, api_base=api_base, timeout=timeout,
                          structured_output=work.settings.get("structured_output", "auto"))
    concurrency = work.settings.get("concurrency")
    # Without a cap of its own the endpoint's limiter keeps whatever cap it has (a grading
    # run's, say): passing None would lift it.
    limiter = (limiter_for(work.model, api_base, concurrency) if concurrency
               else limiter_for(work.model, api_base))
    calls = JobGenerate(
        llm, limiter=limiter,
        sessions=sessions, use_cache=use_cache, counters=Counters(),
        cache_buffer=cache_store.WriteBuffer(sessions),
        on_fatal=lambda exc: fatal.append(str(exc)) if not fatal else None)
    if work.settings.get("call_deadline"):
        grader_options.setdefault("call_deadline", float(work.settings["call_deadline"]))
    grader = PairwiseGrader(calls, holistic=work.holistic, on_error="report",
                            max_concurrency=concurrency, examples=work.examples,
                            **grader_options)
    rubric = [c for _, c in work.criteria]

    async def one(pair: tuple[int, str | None, Any, Any]) -> tuple[int, Any]:
        pair_id, query, a, b = pair
        try:
            return pair_id, await grader.compare(a, b, rubric, query)
        except RubricWorkbenchError as exc:  # the provider failing every try, say
            return pair_id, exc

    try:
        for start in range(0, len(work.pending), batch):
            outcomes = await asyncio.gather(*(one(p) for p in work.pending[start:start + batch]))
            await calls.flush_cache()
            if fatal:
                break
            stored = await asyncio.to_thread(_store, sessions, comparison_id, worker, work,
                                             list(outcomes))
            if not stored:  # cancelled, or taken over
                break
    finally:
        await calls.close()
    await asyncio.to_thread(_finish, sessions, comparison_id, worker,
                            fatal[0] if fatal else None)
    return await asyncio.to_thread(get_comparison, sessions, comparison_id)


def start_in_background(sessions: SessionFactory, comparison_id: int, *,
                        actor: Actor) -> threading.Thread:
    """Judge the comparison in a daemon thread of this process (the app's Compare page: the
    work outlives the browser's rerun; a stopped process leaves it to be started again)."""
    require(actor, Role.ADMIN, "run a comparison")
    def judge() -> None:
        try:
            asyncio.run(run_comparison(sessions, comparison_id, actor=actor))
        except RubricWorkbenchError as exc:  # busy elsewhere, deleted meanwhile: the page says
            log.warning("comparison %s was not judged here: %s", comparison_id, exc)

    thread = threading.Thread(target=judge, name=f"comparison-{comparison_id}", daemon=True)
    thread.start()
    return thread
