"""Grading runs: launch, status changes, and grades recorded one at a time as they complete."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from sqlalchemy import and_, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grading.errors import ConfigurationError
from grading.types import EvaluationReport, Verdict
from storage import limits
from storage import models as m
from storage.convert import grade_info, run_info
from storage.dto import CriterionGradeInfo, GradeInfo, RunInfo
from storage.engine import SessionFactory
from storage.errors import GradeExistsError, InvalidStateError, NotFoundError
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as repo
from storage.run_settings import RunSettings, TokenPrice
from storage.services import calibration
from storage.services.people import record
from storage.services.reviewers import Actor, Role, require

ACTIVE = ("queued", "running")


def _settings(settings: RunSettings | Mapping[str, Any] | None) -> RunSettings:
    if isinstance(settings, RunSettings):
        return settings
    try:
        return RunSettings.model_validate(dict(settings or {}))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigurationError(f"invalid run settings: {problems}") from None


@dataclass(frozen=True)
class Launch:
    """What a launch did: ``created`` is False when the same run was already queued or
    running, and ``run`` is then that run (nothing new was queued)."""

    run: RunInfo
    created: bool


def create_run(
    sessions: SessionFactory, *, rubric_version_id: int, dataset_id: int, grader: str,
    model: str, settings: RunSettings | Mapping[str, Any] | None = None,
    response_ids: Sequence[int] | None = None, name: str = "", actor: Actor,
) -> RunInfo:
    """Queue a run over a dataset (or a selection of it); freezes the rubric version."""
    return _queue(sessions, rubric_version_id=rubric_version_id, dataset_id=dataset_id,
                  grader=grader, model=model, settings=settings, response_ids=response_ids,
                  name=name, reuse_active=False, actor=actor).run


def launch_run(
    sessions: SessionFactory, *, rubric_version_id: int, dataset_id: int, grader: str,
    model: str, settings: RunSettings | Mapping[str, Any] | None = None,
    response_ids: Sequence[int] | None = None, name: str = "", actor: Actor,
) -> Launch:
    """Queue a run unless the same work is already queued or running: same rubric version,
    dataset, grader, model, settings and responses (the name is only a label). A second
    click, a stale form or a second browser gets the active run back instead of a copy."""
    return _queue(sessions, rubric_version_id=rubric_version_id, dataset_id=dataset_id,
                  grader=grader, model=model, settings=settings, response_ids=response_ids,
                  name=name, reuse_active=True, actor=actor)


def _queue(
    sessions: SessionFactory, *, rubric_version_id: int, dataset_id: int, grader: str,
    model: str, settings: RunSettings | Mapping[str, Any] | None,
    response_ids: Sequence[int] | None, name: str, reuse_active: bool, actor: Actor,
) -> Launch:
    require(actor, Role.ADMIN, "launch a grading run")
    if grader not in m.GRADER_KINDS:
        raise ConfigurationError(
            f"unknown grader {grader!r}; use one of {', '.join(m.GRADER_KINDS)}")
    if not model.strip():
        raise ConfigurationError("a run needs a model name (e.g. 'openai/gpt-4o-mini')")
    limits.check([("the model name", model, limits.MODEL_MAX),
                  ("the run name", name, limits.NAME_MAX)])
    run_settings = _settings(settings)
    with sessions.begin() as session:
        if reuse_active:
            # Write first: on SQLite this takes the database's write lock before anything is
            # read, and on PostgreSQL the version's row lock, so two launches of the same
            # work are checked one after the other and the second sees the first's run.
            session.execute(update(m.RubricVersionRow)
                            .where(m.RubricVersionRow.id == rubric_version_id)
                            .values(note=m.RubricVersionRow.note))
        version = rubric_repo.get_version(session, rubric_version_id, for_update=True)
        dataset_repo.get_dataset(session, dataset_id)
        in_dataset = dataset_repo.response_ids(session, dataset_id)
        if response_ids is None:
            chosen = in_dataset
        else:
            chosen = list(dict.fromkeys(response_ids))
            outside = sorted(set(chosen) - set(in_dataset))
            if outside:
                raise NotFoundError(
                    f"responses {', '.join(map(str, outside[:10]))} are not in dataset "
                    f"{dataset_id}")
        if not chosen:
            raise InvalidStateError("there are no responses to grade in this selection")
        if reuse_active:
            same = _active_duplicate(session, version.id, dataset_id, grader, model.strip(),
                                     run_settings, chosen)
            if same is not None:
                return Launch(run_info(same), created=False)
        examples = (calibration.draw_rows(session, version.id, grader, run_settings.calibration)
                    if run_settings.calibration is not None else [])  # may refuse: no write yet
        if version.frozen_at is None:
            version.frozen_at = m.utcnow()
        run = m.RunRow(
            name=name, rubric_version_id=version.id, dataset_id=dataset_id, grader=grader,
            model=model.strip(), settings=run_settings.to_json(), status="queued",
            response_count=len(chosen), launched_by=actor.key,
        )
        session.add(run)
        session.flush()
        repo.add_run_responses(session, run.id, chosen)
        calibration.record_examples(session, run.id, examples)
        return Launch(run_info(run), created=True)


def _active_duplicate(
    session: Session, version_id: int, dataset_id: int, grader: str, model: str,
    settings: RunSettings, chosen: Sequence[int],
) -> m.RunRow | None:
    wanted = set(chosen)
    for row in repo.list_runs(session, rubric_version_id=version_id, dataset_id=dataset_id,
                              statuses=ACTIVE):
        if (row.grader, row.model, row.response_count) != (grader, model, len(wanted)):
            continue
        if _settings(row.settings) != settings:
            continue
        graded_here = set(session.scalars(
            select(m.RunResponseRow.response_id).where(m.RunResponseRow.run_id == row.id)))
        if graded_here == wanted:
            return row
    return None


def get_run(sessions: SessionFactory, run_id: int) -> RunInfo:
    with sessions() as session:
        return run_info(repo.get_run(session, run_id))


def list_runs(
    sessions: SessionFactory, *, rubric_version_id: int | None = None,
    dataset_id: int | None = None, statuses: Sequence[str] | None = None,
) -> list[RunInfo]:
    with sessions() as session:
        return [run_info(r) for r in repo.list_runs(
            session, rubric_version_id=rubric_version_id, dataset_id=dataset_id,
            statuses=statuses)]


def pending_response_ids(sessions: SessionFactory, run_id: int) -> list[int]:
    """Responses of the run without a stored grade: what a (resumed) run still has to do."""
    with sessions() as session:
        repo.get_run(session, run_id)
        return repo.pending_response_ids(session, run_id)


def _transition(
    sessions: SessionFactory, run_id: int, allowed_from: Sequence[str], to: str,
    *, audit: tuple[Actor, str] | None = None, **changes: Any,
) -> RunInfo:
    with sessions.begin() as session:
        run = repo.get_run(session, run_id, for_update=True)
        if run.status not in allowed_from:
            raise InvalidStateError(
                f"run {run_id} is {run.status}; it cannot become {to}")
        if audit is not None:
            record(session, audit[0], audit[1], "run", run_id, run.name or run.model,
                   f"was {run.status}")
        run.status = to
        for key, value in changes.items():
            setattr(run, key, value)
        if to == "running" and run.started_at is None:
            run.started_at = m.utcnow()
        if to in ("done", "failed", "cancelled"):
            run.finished_at = m.utcnow()
        return run_info(run)


def start_run(sessions: SessionFactory, run_id: int, *, worker: str | None = None) -> RunInfo:
    """queued (or running, on resume) -> running."""
    return _transition(sessions, run_id, ACTIVE, "running", claimed_by=worker,
                       heartbeat_at=m.utcnow())


def heartbeat(sessions: SessionFactory, run_id: int, *, worker: str | None = None) -> None:
    with sessions.begin() as session:
        run = repo.get_run(session, run_id)
        run.heartbeat_at = m.utcnow()
        if worker is not None:
            run.claimed_by = worker


def finish_run(sessions: SessionFactory, run_id: int) -> RunInfo:
    return _transition(sessions, run_id, ("running",), "done")


def fail_run(sessions: SessionFactory, run_id: int, error: str) -> RunInfo:
    """The run cannot work at all (e.g. no credentials); ``error`` says what to do."""
    return _transition(sessions, run_id, ACTIVE, "failed", error=error)


def cancel_run(sessions: SessionFactory, run_id: int, *, actor: Actor) -> RunInfo:
    require(actor, Role.ADMIN, "cancel a grading run")
    return _transition(sessions, run_id, ACTIVE, "cancelled", audit=(actor, "cancel"))


def requeue_run(sessions: SessionFactory, run_id: int, *, actor: Actor) -> RunInfo:
    """Put a failed or cancelled run back in the queue; only ungraded responses run again."""
    require(actor, Role.ADMIN, "requeue a grading run")
    return _transition(sessions, run_id, ("failed", "cancelled"), "queued", error=None,
                       finished_at=None, claimed_by=None, audit=(actor, "requeue"))


def record_grade(
    sessions: SessionFactory, run_id: int, response_id: int, report: EvaluationReport,
    latency_s: float | None = None, *, transient: bool = False,
) -> GradeInfo:
    """Store one completed grade and add it to the run's totals, in one transaction.

    ``report.report`` (when present) lists one CriterionReport per criterion of the run's
    rubric version, in order. A second grade for the same (run, response) raises
    GradeExistsError, so a resumed or doubly-claimed run never stores a duplicate.
    """
    # Core statements, not ORM objects: the job runner calls this once per grade, and the
    # unit of work made it ~5 ms of CPU per grade (a fifth of a run's overhead at scale).
    grade = _grade_values(run_id, response_id, report, latency_s)
    row = {**grade, "transient": transient}
    usage = report.token_usage
    failed = report.score is None and report.error is not None
    try:
        with sessions.begin() as session:
            found = session.execute(
                select(m.RunRow.rubric_version_id, m.RunRow.settings,
                       m.RunResponseRow.response_id)
                .outerjoin(m.RunResponseRow, and_(m.RunResponseRow.run_id == m.RunRow.id,
                                                  m.RunResponseRow.response_id == response_id))
                .where(m.RunRow.id == run_id)
            ).first()
            if found is None:
                raise NotFoundError(f"grading run {run_id} does not exist")
            if found.response_id is None:
                raise NotFoundError(f"response {response_id} is not part of run {run_id}")
            criteria = session.execute(
                select(m.CriterionRow.id, m.CriterionRow.requirement, m.CriterionRow.weight)
                .where(m.CriterionRow.version_id == found.rubric_version_id)
                .order_by(m.CriterionRow.position)).all()
            verdicts = _criterion_values(report, criteria)
            cost = _priced_cost(report, found.settings)
            grade["cost"] = row["cost"] = cost
            grade_id = session.scalar(
                insert(m.GradeRow.__table__).values(**row).returning(m.GradeRow.id))
            if verdicts:
                session.execute(insert(m.GradeCriterionRow.__table__),
                                [{**row, "grade_id": grade_id} for row in verdicts])
            repo.add_totals(
                session, run_id,
                done_count=0 if failed else 1, failed_count=1 if failed else 0,
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                total_tokens=usage.total_tokens if usage else 0,
                cost=cost or 0.0,
                unknown_cost_count=1 if cost is None else 0,
            )
    except IntegrityError:
        raise GradeExistsError(
            f"run {run_id} already has a grade for response {response_id}") from None
    return GradeInfo(
        id=grade_id, **grade,
        criteria=tuple(
            CriterionGradeInfo(
                criterion_id=row["criterion_id"], position=row["position"],
                verdict=None if row["verdict"] is None else Verdict(row["verdict"]),
                reason=row["reason"], error=row["error"])
            for row in verdicts),
    )


def _priced_cost(report: EvaluationReport, settings: Mapping[str, Any] | None) -> float | None:
    """The grade's cost: from the price the run was launched with when there is one (a
    local or unpriced model), else litellm's; None when unknown."""
    price = (settings or {}).get("price")
    if not price:
        return report.completion_cost
    usage = report.token_usage
    if usage is None:
        return None
    return TokenPrice.model_validate(price).cost(usage.prompt_tokens, usage.completion_tokens)


def _grade_values(
    run_id: int, response_id: int, report: EvaluationReport, latency_s: float | None,
) -> dict[str, Any]:
    usage = report.token_usage
    return {
        "run_id": run_id, "response_id": response_id, "score": report.score,
        "raw_score": report.raw_score, "llm_raw_score": report.llm_raw_score,
        "reason": limits.storable(report.reason),
        "error": limits.storable(report.error), "cannot_assess_count": report.cannot_assess_count,
        "length_penalty": report.length_penalty,
        "prompt_tokens": usage.prompt_tokens if usage else None,
        "completion_tokens": usage.completion_tokens if usage else None,
        "total_tokens": usage.total_tokens if usage else None,
        "cost": report.completion_cost, "latency_s": latency_s, "created_at": m.utcnow(),
    }


def _criterion_values(report: EvaluationReport, criteria: Sequence[Any]) -> list[dict[str, Any]]:
    """One grade_criteria row per criterion (without grade_id); checks the report matches."""
    if report.report is None:
        return []
    if len(report.report) != len(criteria):
        raise ValueError(
            f"the report has {len(report.report)} criteria but the rubric version has "
            f"{len(criteria)}")
    rows = []
    for position, (item, criterion) in enumerate(zip(report.report, criteria, strict=True)):
        if item.requirement != criterion.requirement or item.weight != criterion.weight:
            raise ValueError(
                f"report criterion {position + 1} does not match the rubric version "
                f"({item.requirement[:60]!r} vs {criterion.requirement[:60]!r})")
        rows.append({
            "criterion_id": criterion.id, "position": position,
            "verdict": None if item.verdict is None else item.verdict.value,
            "reason": limits.storable(item.reason or ""),
            "error": limits.storable(item.error),
        })
    return rows


def list_grades(
    sessions: SessionFactory, run_id: int, response_ids: Sequence[int] | None = None
) -> list[GradeInfo]:
    with sessions() as session:
        repo.get_run(session, run_id)
        return [grade_info(g) for g in repo.grades_for_run(session, run_id, response_ids)]


def get_grade(sessions: SessionFactory, grade_id: int) -> GradeInfo:
    with sessions() as session:
        return grade_info(repo.get_grade(session, grade_id))
