"""Rewording a criterion, tried on the responses people reviewed before it is adopted.

A trial judges only the reworded criterion, with the model and grader settings of an existing
run, on the responses that have a human MET/UNMET verdict for that criterion — on a
multi-choice criterion, a human option (not an NA one). It reports the judge's agreement with
people before (the run's own verdicts or options) and after (the new wording) on the same
responses, with bootstrap intervals, and every response whose verdict or option flipped
(``trial_figures``: on a rating scale, exact match and quadratic-weighted kappa).
A calibrated run's judge is tried with the examples that run showed it for this criterion
(the same people's verdicts and reasons, now under the new wording), so "before" and "after"
differ only in the wording. Adopting makes a new rubric version with the new wording.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from grading.bootstrap import Interval
from grading.calibration import RubricExamples
from grading.errors import RubricWorkbenchError
from grading.types import Criterion, EvaluationReport, Verdict
from storage import limits
from storage import models as m
from storage.convert import criterion_info, response_info, run_info
from storage.dto import Choice, CriterionInfo, ResponseInfo, RunInfo
from storage.engine import SessionFactory
from storage.errors import InvalidInputError, InvalidStateError, NotFoundError
from storage.jobs.cost_budget import CostBudget
from storage.jobs.estimate import RunEstimate, estimate_for
from storage.repositories import runs as run_repo
from storage.services import calibration, trial_judge, trial_progress
from storage.services.reviewers import Actor, Role, require
from storage.services.trial_adoption import adopt_wording
from storage.services.trial_figures import (
    AgreementFigures,
    difference_interval,
    figures,
    human_choice,
    report_entry,
    scale_of,
    stored_choice,
)
from storage.services.trial_judge import GradeFn

__all__ = ["AgreementFigures", "adopt_wording", "check_trial", "get_trial", "list_trials",
           "plan_trial", "retry_plan", "run_trial"]
HOLISTIC = "rubric_as_judge"


@dataclass(frozen=True)
class ReviewedCase:
    response: ResponseInfo
    human: Choice  # people's verdict, or the option label they chose
    before: Choice | None  # the base run's verdict or option (None: not graded or failed)
    before_reason: str


@dataclass(frozen=True)
class TrialPlan:
    base_run: RunInfo
    criterion: CriterionInfo
    requirement: str
    cases: tuple[ReviewedCase, ...]
    estimate: RunEstimate
    examples: RubricExamples | None = None  # a calibrated base run's, for this criterion

    @property
    def new_criterion(self) -> Criterion:
        """The criterion reworded: the same weight, kind and options."""
        return self.criterion.to_criterion().model_copy(
            update={"requirement": self.requirement})


@dataclass(frozen=True)
class Flip:
    response_id: int
    external_id: str | None
    human: Choice
    before: Choice | None
    before_reason: str
    after: Choice | None
    after_reason: str


@dataclass(frozen=True)
class TrialResult:
    trial_id: int
    plan: TrialPlan
    before: AgreementFigures
    after: AgreementFigures
    difference_interval: Interval | None  # after minus before, macro-F1, paired resamples
    flips: tuple[Flip, ...]
    judged: int
    failed: int
    stopped: str | None  # why the trial stopped early (cost cap), None when complete
    cost: float | None
    created_by: str
    created_at: datetime
    status: str = "done"  # running | interrupted | done | stopped | failed
    total: int | None = None  # responses the trial planned to judge
    note: str = ""  # why it stopped or failed


def plan_trial(
    sessions: SessionFactory, *, base_run_id: int, criterion_id: int, requirement: str,
) -> TrialPlan:
    """What a trial would judge and cost; refuses a trial that cannot tell anything."""
    requirement = requirement.strip()
    if not requirement:
        raise InvalidInputError("the new wording is empty: write the requirement to try")
    with sessions() as session:
        run = run_repo.get_run(session, base_run_id)
        if run.grader == HOLISTIC:
            raise InvalidInputError(
                f"run {run.id} is holistic (one 0-100 score, no verdict per criterion): pick a "
                "per-criterion or one-shot run as the judge to try the wording with")
        row = session.get(m.CriterionRow, criterion_id)
        if row is None or row.version_id != run.rubric_version_id:
            raise NotFoundError(f"criterion {criterion_id} is not part of the rubric version "
                                f"run {run.id} graded")
        criterion = criterion_info(row)
        cases = _reviewed_cases(session, run, criterion)
        base = run_info(run)
    if not cases:
        what = "by choosing an option" if criterion.is_multi_choice else "(MET or UNMET)"
        raise InvalidInputError(
            f"nobody has reviewed '{criterion.label}' {what} on the responses run "
            f"{base.id} graded: review some on the Review page first, then try the wording")
    plan_criterion = criterion.to_criterion().model_copy(update={"requirement": requirement})
    examples = _base_examples(sessions, base, criterion, requirement)
    estimate = estimate_for(
        grader="per_criterion", model=base.model, criteria=[plan_criterion],
        responses=[(c.response.to_grade, c.response.query, c.response.reference)
                   for c in cases],
        settings=base.settings, examples=examples)
    return TrialPlan(base, criterion, requirement, tuple(cases), estimate, examples)


def _base_examples(sessions: SessionFactory, run: RunInfo, criterion: CriterionInfo,
                   requirement: str) -> RubricExamples | None:
    """The examples a calibrated base run showed its judge for ``criterion``, pinned to the
    new wording; None when the run is not calibrated."""
    loaded = calibration.load_examples(sessions, run.id)
    if loaded is None:
        return None
    if loaded.requirements[criterion.position] != criterion.requirement:
        raise InvalidStateError(
            f"run {run.id}'s recorded examples do not match '{criterion.label}': launch a "
            "new calibrated run of this rubric version and try the wording with it")
    return RubricExamples((loaded.sets[criterion.position],), (requirement,))


def _reviewed_cases(session, run: m.RunRow, criterion: CriterionInfo) -> list[ReviewedCase]:
    humans = {response_id: choice for response_id, choice in _current_humans(session, criterion)}
    in_run = set(session.scalars(select(m.RunResponseRow.response_id)
                                 .where(m.RunResponseRow.run_id == run.id)))
    judged = {
        response_id: (stored_choice(verdict, option), reason)
        for response_id, verdict, option, reason in session.execute(
            select(m.GradeRow.response_id, m.GradeCriterionRow.verdict,
                   m.GradeCriterionRow.option, m.GradeCriterionRow.reason)
            .join(m.GradeCriterionRow, m.GradeCriterionRow.grade_id == m.GradeRow.id)
            .where(m.GradeRow.run_id == run.id,
                   m.GradeCriterionRow.criterion_id == criterion.id))}
    # A calibrated base run is compared with people on the responses it was not shown as
    # examples only, as on the Agreement page (storage/services/calibration.py).
    shown = calibration.example_response_ids(session, [run.id]).get(run.id, set())
    ids = sorted(r for r in humans if r in in_run and r not in shown)
    responses = {row.id: response_info(row) for row in session.scalars(
        select(m.ResponseRow).where(m.ResponseRow.id.in_(ids)))} if ids else {}
    cases = []
    for response_id in ids:
        before, reason = judged.get(response_id, (None, ""))
        cases.append(ReviewedCase(responses[response_id], humans[response_id], before,
                                  reason or ""))
    return cases


def check_trial(plan: TrialPlan, *, actor: Actor, max_cost: float | None) -> None:
    """Refuse a trial that may not or cannot run, before anything is written."""
    require(actor, Role.ADMIN, "try a criterion's new wording")
    if max_cost is not None and max_cost <= 0:
        raise InvalidInputError("the cost cap must be a positive amount of dollars")
    if max_cost is not None and plan.estimate.cost is None:
        raise InvalidInputError(
            f"the price of {plan.base_run.model} is unknown, so a cost cap cannot be kept: set "
            "its price per million tokens in Settings, or try without a cap")


def begin_trial(sessions: SessionFactory, plan: TrialPlan, *, actor: Actor,
                max_cost: float | None, worker: str) -> int:
    """The trial's row, running: its progress is in the database from the start."""
    check_trial(plan, actor=actor, max_cost=max_cost)
    return trial_progress.begin(
        sessions, criterion_id=plan.criterion.id, base_run_id=plan.base_run.id,
        requirement=plan.requirement, total=len(plan.cases), max_cost=max_cost, actor=actor,
        worker=worker)


def retry_plan(sessions: SessionFactory, trial_id: int) -> TrialPlan:
    """The plan of a stored trial, made again from the human verdicts in force now."""
    with sessions() as session:
        row = session.get(m.CriterionTrialRow, trial_id)
        if row is None:
            raise NotFoundError(f"wording trial {trial_id} does not exist")
        base_run_id, criterion_id, requirement = row.base_run_id, row.criterion_id, \
            row.requirement
    return plan_trial(sessions, base_run_id=base_run_id, criterion_id=criterion_id,
                      requirement=requirement)


async def run_trial(
    sessions: SessionFactory, plan: TrialPlan, *, actor: Actor, max_cost: float | None,
    grade_fn: GradeFn | None = None, concurrency: int = 8, trial_id: int | None = None,
    worker: str | None = None, done: Sequence[dict[str, Any]] = (),
    spent_before: float | None = 0.0,
) -> TrialResult:
    """Judge the reworded criterion on every reviewed response, stopping at ``max_cost``.

    ``grade_fn`` grades one response on one criterion; by default the base run's model and
    settings through the job runner's provider path (cache, limiter, retries). The progress
    is saved as it goes (``trial_id``/``worker``: a trial already begun, e.g. a retry with
    the results it had, ``done``, and what they cost, ``spent_before``).
    """
    check_trial(plan, actor=actor, max_cost=max_cost)
    if trial_id is None:
        from storage.jobs.worker import new_worker_id

        worker = worker or new_worker_id()
        trial_id = begin_trial(sessions, plan, actor=actor, max_cost=max_cost, worker=worker)
    assert worker is not None, "a trial begun elsewhere is run by the worker that holds it"
    close: Callable[[], Awaitable[None]] | None = None
    if grade_fn is None:
        grade_fn, close = trial_judge.grade_fn_of(sessions, plan.base_run, plan.examples)
    criterion = plan.new_criterion
    kept = {entry["response_id"]: dict(entry) for entry in done}
    entries: list[dict[str, Any]] = list(kept.values())
    spent: list[float | None] = [spent_before]
    stopped: list[str] = []
    window = asyncio.Semaphore(concurrency)
    # A call starts only while it fits under the cap (those in flight counted at the average
    # cost of a call so far), so the eight in flight never take the trial past it.
    budget = CostBudget(max_cost, spent_before or 0.0, len(kept))

    async def one(case: ReviewedCase) -> None:
        async with window:
            if stopped:
                return
            if not await budget.admit():
                if not stopped:
                    over = (f": one more (about ${budget.average or 0.0:.4f} each) would have "
                            "gone over it" if budget.full else "")
                    stopped.append(f"stopped at the cost cap (${max_cost:g}) after "
                                   f"{len(entries)} of {len(plan.cases)} responses{over}")
                return
            cost = None
            try:
                report = await grade_fn(case.response, criterion)
                cost = report.completion_cost
            finally:
                budget.finished(cost)
            entry, reason = _entry_of(report)
            entries.append({"response_id": case.response.id, **entry,
                            "reason": limits.storable(reason)})
            spent.append(report.completion_cost)

    def cost() -> float | None:
        return None if any(c is None for c in spent) else sum(c for c in spent if c is not None)

    async def keep_saving() -> None:
        while True:
            await asyncio.sleep(trial_progress.HEARTBEAT_SECONDS)
            with contextlib.suppress(Exception):  # the next beat tries again
                await asyncio.to_thread(trial_progress.save, sessions, trial_id, worker,
                                        results=list(entries), cost=cost())

    saver = asyncio.create_task(keep_saving())
    try:
        await asyncio.gather(*(one(case) for case in plan.cases
                               if case.response.id not in kept))
    except BaseException as exc:
        saver.cancel()
        note = str(exc) if isinstance(exc, RubricWorkbenchError) else \
            f"unexpected error: {type(exc).__name__}"
        with contextlib.suppress(Exception):
            trial_progress.save(sessions, trial_id, worker, results=entries, cost=cost(),
                                status="failed", note=note)
        raise
    finally:
        saver.cancel()
        if close is not None:
            await close()
    order = {c.response.id: i for i, c in enumerate(plan.cases)}
    entries.sort(key=lambda e: order.get(e["response_id"], len(order)))
    trial_progress.save(sessions, trial_id, worker, results=entries, cost=cost(),
                        status="stopped" if stopped else "done",
                        note=stopped[0] if stopped else "")
    return get_trial(sessions, trial_id)


def _entry_of(report: EvaluationReport | None) -> tuple[dict[str, Any], str]:
    """({"verdict", "option"} of the judge's answer, its reason)."""
    if report is None or not report.report:
        return ({"verdict": None, "option": None},
                "" if report is None else (report.error or ""))
    row = report.report[0]
    return report_entry(row), row.reason or (row.error or "")


def get_trial(sessions: SessionFactory, trial_id: int) -> TrialResult:
    """A stored trial with its figures, computed against the current human verdicts."""
    with sessions() as session:
        row = session.get(m.CriterionTrialRow, trial_id)
        if row is None:
            raise NotFoundError(f"wording trial {trial_id} does not exist")
        run = run_repo.get_run(session, row.base_run_id)
        criterion = criterion_info(session.get(m.CriterionRow, row.criterion_id))
        reviewed = {c.response.id: c for c in _reviewed_cases(session, run, criterion)}
        base = run_info(run)
        stored = list(row.results)
        status, note, cost = trial_progress.status_of(row, m.utcnow()), row.note, row.cost
        total = row.total
        created_by, created_at = row.created_by, row.created_at
    # responses whose human verdict was withdrawn since (or made CANNOT_ASSESS, or an NA
    # option) drop out
    judged = [(reviewed[r["response_id"]], stored_choice(r["verdict"], r.get("option")),
               r["reason"]) for r in stored if r["response_id"] in reviewed]
    cases = [case for case, _, _ in judged]
    humans = [c.human for c in cases]
    before = [c.before for c in cases]
    after = [choice for _, choice, _ in judged]
    scale = scale_of(criterion)

    flips = tuple(
        Flip(c.response.id, c.response.external_id, c.human, c.before, c.before_reason, v,
             reason)
        for c, v, reason in judged if v != c.before
    )
    plan = TrialPlan(base, criterion, row.requirement, tuple(cases),
                     estimate_for(grader="per_criterion", model=base.model,
                                  criteria=[criterion.to_criterion()], responses=[],
                                  settings=base.settings))
    return TrialResult(
        trial_id=trial_id, plan=plan, before=figures(humans, before, scale),
        after=figures(humans, after, scale),
        difference_interval=difference_interval(humans, before, after, scale),
        flips=flips, judged=len(cases), failed=sum(1 for v in after if v is None),
        stopped=note if status == "stopped" else None, cost=cost,
        created_by=created_by, created_at=created_at, status=status, total=total, note=note,
    )


def list_trials(sessions: SessionFactory, criterion_id: int) -> list[tuple[int, str, str]]:
    """(trial id, wording, when and by whom) of the trials of a criterion, newest first."""
    with sessions() as session:
        rows = session.execute(
            select(m.CriterionTrialRow.id, m.CriterionTrialRow.requirement,
                   m.CriterionTrialRow.created_at, m.CriterionTrialRow.created_by)
            .where(m.CriterionTrialRow.criterion_id == criterion_id)
            .order_by(m.CriterionTrialRow.id.desc())).all()
    return [(i, text, f"{when:%Y-%m-%d %H:%M} UTC by {who}") for i, text, when, who in rows]


def _current_humans(session, criterion: CriterionInfo) -> list[tuple[int, Choice]]:
    """(response id, verdict or option label) of the human decision in force on this
    criterion (adjudicated, or agreed by every reviewer; disputed ones have none), decisions
    carried from earlier versions with the same requirement text included; abstentions and
    decisions that do not fit the criterion's kind or options are left out
    (``trial_figures.human_choice``)."""
    from storage.repositories import effective as effective_repo

    row = session.get(m.CriterionRow, criterion.id)
    if row is None:
        return []
    found = []
    for response_id, verdict, option in effective_repo.decided_rows(session, row.version_id,
                                                                    criterion.id):
        choice = human_choice(criterion, Verdict(verdict), option)
        if choice is not None:
            found.append((response_id, choice))
    return found
