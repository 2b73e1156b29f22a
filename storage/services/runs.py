"""Grading runs: launch and status changes; grades are stored by ``grade_records``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from grading.errors import ConfigurationError
from storage import limits, run_rules
from storage import models as m
from storage.convert import grade_info, run_info
from storage.dto import GradeInfo, RunInfo
from storage.engine import SessionFactory
from storage.errors import InvalidStateError, NotFoundError
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as repo
from storage.run_settings import RunSettings
from storage.services import calibration

# Grades are stored by grade_records; callers have always found them here too.
from storage.services.grade_records import NewGrade as NewGrade
from storage.services.grade_records import record_grade as record_grade
from storage.services.grade_records import record_grades as record_grades
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
    if run_rules.samples_need_other_graders(run_settings.samples, [grader]):
        raise ConfigurationError(
            f"only the per-criterion grader can ask the judge several times per criterion "
            f"(samples {run_settings.samples}); choose per-criterion or one sample")
    if run_rules.criteria_shuffle_needs_other_graders(run_settings.shuffle_criteria, [grader]):
        raise ConfigurationError(
            "only the one-shot grader lists every criterion in one prompt, so only it can "
            "shuffle the criteria per response; choose one-shot or leave shuffling off")
    if run_rules.options_shuffle_refusal(run_settings.shuffle_options, [grader], True) \
            is run_rules.OptionsShuffle.ONE_SCORE_GRADER:
        raise ConfigurationError(
            "rubric-as-judge gives one overall score and shows no options, so it cannot "
            "shuffle them; choose per-criterion or one-shot, or leave option shuffling off")
    with sessions.begin() as session:
        if reuse_active:
            # Write first: on SQLite this takes the database's write lock before anything is
            # read, and on PostgreSQL the version's row lock, so two launches of the same
            # work are checked one after the other and the second sees the first's run.
            session.execute(update(m.RubricVersionRow)
                            .where(m.RubricVersionRow.id == rubric_version_id)
                            .values(note=m.RubricVersionRow.note))
        version = rubric_repo.get_version(session, rubric_version_id, for_update=True)
        if run_rules.options_shuffle_refusal(
                run_settings.shuffle_options, [grader],
                any(c.options for c in version.criteria)) is run_rules.OptionsShuffle.NO_OPTIONS:
            raise ConfigurationError(
                "none of this rubric version's criteria has options (multi-choice), so "
                "there is nothing to shuffle; leave option shuffling off")
        dataset_repo.get_dataset(session, dataset_id)
        # The whole dataset is never read into memory (a million ids were hundreds of MB
        # as insert parameters): it is counted, and its responses are copied by the database.
        chosen: list[int] | None = None
        if response_ids is None:
            count = dataset_repo.response_count(session, dataset_id)
        else:
            chosen = list(dict.fromkeys(response_ids))
            outside = repo.outside_dataset(session, dataset_id, chosen)
            if outside:
                raise NotFoundError(
                    f"responses {', '.join(map(str, outside[:10]))} are not in dataset "
                    f"{dataset_id}")
            count = len(chosen)
        if not count:
            raise InvalidStateError("there are no responses to grade in this selection")
        if reuse_active:
            same = _active_duplicate(session, version.id, dataset_id, grader, model.strip(),
                                     run_settings, chosen, count)
            if same is not None:
                return Launch(run_info(same), created=False)
        examples = (calibration.draw_rows(session, version.id, grader, run_settings.calibration)
                    if run_settings.calibration is not None else [])  # may refuse: no write yet
        if version.frozen_at is None:
            version.frozen_at = m.utcnow()
        run = m.RunRow(
            name=name, rubric_version_id=version.id, dataset_id=dataset_id, grader=grader,
            model=model.strip(), settings=run_settings.to_json(), status="queued",
            response_count=count, launched_by=actor.key,
        )
        session.add(run)
        session.flush()
        if chosen is None:
            repo.add_dataset_to_run(session, run.id, dataset_id)
        else:
            repo.add_run_responses(session, run.id, chosen)
        calibration.record_examples(session, run.id, examples)
        record(session, actor, "launch", "run", run.id, run.name or run.model,
               f"{grader} over {count} responses")
        return Launch(run_info(run), created=True)


def _active_duplicate(
    session: Session, version_id: int, dataset_id: int, grader: str, model: str,
    settings: RunSettings, chosen: Sequence[int] | None, count: int,
) -> m.RunRow | None:
    """The active run doing this very work; ``chosen`` None: the whole dataset (of
    ``count`` responses)."""
    for row in repo.list_runs(session, rubric_version_id=version_id, dataset_id=dataset_id,
                              statuses=ACTIVE):
        if (row.grader, row.model, row.response_count) != (grader, model, count):
            continue
        if _settings(row.settings) != settings:
            continue
        if chosen is None:
            # its responses are of this dataset: as many as the dataset has is all of them
            if repo.run_response_count(session, row.id) == count:
                return row
            continue
        graded_here = set(session.scalars(
            select(m.RunResponseRow.response_id).where(m.RunResponseRow.run_id == row.id)))
        if graded_here == set(chosen):
            return row
    return None


def get_run(sessions: SessionFactory, run_id: int) -> RunInfo:
    with sessions() as session:
        return run_info(repo.get_run(session, run_id))


def run_status(sessions: SessionFactory, run_id: int) -> str | None:
    """The run's status alone (None once it is deleted): a cheap look for a running job."""
    with sessions() as session:
        return session.scalar(select(m.RunRow.status).where(m.RunRow.id == run_id))


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


def list_grades(
    sessions: SessionFactory, run_id: int, response_ids: Sequence[int] | None = None
) -> list[GradeInfo]:
    with sessions() as session:
        repo.get_run(session, run_id)
        return [grade_info(g) for g in repo.grades_for_run(session, run_id, response_ids)]


def iter_graded_ids(sessions: SessionFactory, run_id: int, page: int = 500
                    ) -> Iterator[list[int]]:
    """The ids of the responses the run has graded, in order, a page at a time (never all
    of a large run's grades in memory)."""
    with sessions() as session:
        repo.get_run(session, run_id)
    after = 0
    while True:
        with sessions() as session:
            ids = repo.graded_ids_after(session, run_id, after, page)
        if not ids:
            return
        yield ids
        after = ids[-1]


def get_grade(sessions: SessionFactory, grade_id: int) -> GradeInfo:
    with sessions() as session:
        return grade_info(repo.get_grade(session, grade_id))
