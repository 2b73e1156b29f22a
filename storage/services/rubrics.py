"""Rubrics and versions: create, edit (a frozen version is never changed), import/export,
archive, delete."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grading.rubric import Rubric
from grading.types import Criterion
from storage import limits
from storage import models as m
from storage.convert import version_info
from storage.dto import DeletionSummary, RubricInfo, RubricVersionInfo
from storage.engine import SessionFactory
from storage.errors import (
    ConfirmationRequiredError,
    HumanVerdictsExistError,
    InvalidInputError,
    InvalidStateError,
    NameTakenError,
)
from storage.repositories import comparisons as comparison_repo
from storage.repositories import rubrics as repo
from storage.repositories import verdicts as verdict_repo
from storage.services import effective_upkeep
from storage.services.people import record
from storage.services.reviewers import Actor, Role, require
from storage.services.run_cleanup import count_panels, delete_runs


def _validated(criteria: Sequence[Criterion] | Rubric) -> list[Criterion]:
    # Rubric() checks emptiness and duplicate names and lists every problem.
    checked = list(criteria) if isinstance(criteria, Rubric) else Rubric(list(criteria)).criteria
    problems = []
    for number, criterion in enumerate(checked, start=1):
        where = f"criterion {number}" + (f" ({criterion.name!r})" if criterion.name else "")
        try:
            limits.check([("its name", criterion.name, limits.NAME_MAX),
                          ("its section", criterion.section, limits.NAME_MAX),
                          ("its requirement", criterion.requirement, None),
                          *((f"option {number}'s label", option.label, limits.NAME_MAX)
                            for number, option in enumerate(criterion.options or (), 1))],
                         where)
        except InvalidInputError as exc:
            problems.append(str(exc))
    if problems:
        raise InvalidInputError("; ".join(problems))
    return checked


def _clean_name(name: str, what: str) -> str:
    cleaned = name.strip()
    if not cleaned:
        raise InvalidInputError(f"a {what} needs a name")
    limits.check([(f"the {what} name", cleaned, limits.NAME_MAX)])
    return cleaned


def create_rubric(
    sessions: SessionFactory, name: str, criteria: Sequence[Criterion] | Rubric, *,
    description: str = "", note: str = "", actor: Actor,
) -> RubricVersionInfo:
    """A new rubric with its first version."""
    require(actor, Role.ADMIN, "create a rubric")
    return _create(sessions, name, criteria, description, note, actor, ("create", ""))


def _create(
    sessions: SessionFactory, name: str, criteria: Sequence[Criterion] | Rubric,
    description: str, note: str, actor: Actor, event: tuple[str, str],
) -> RubricVersionInfo:
    name = _clean_name(name, "rubric")
    criteria = _validated(criteria)
    limits.check([("the description", description, None), ("the note", note, None)])
    try:
        with sessions.begin() as session:
            if repo.find_rubric_by_name(session, name) is not None:
                raise NameTakenError(f"a rubric named {name!r} already exists; pick another name")
            rubric = repo.add_rubric(session, name, description)
            version = repo.add_version(session, rubric, criteria, note, actor.key)
            record(session, actor, event[0], "rubric", rubric.id, name, event[1])
            return version_info(version)
    except IntegrityError:
        raise NameTakenError(f"a rubric named {name!r} already exists; pick another name") from None


def import_rubric(
    sessions: SessionFactory, name: str, text: str, *, filename: str | None = None,
    description: str = "", actor: Actor,
) -> RubricVersionInfo:
    """Create a rubric from YAML or JSON text (raises RubricValidationError listing problems)."""
    require(actor, Role.ADMIN, "import a rubric")
    return _create(sessions, name, Rubric.from_text(text, filename=filename), description, "",
                   actor, ("import", f"from {filename}" if filename else ""))


def export_version(
    sessions: SessionFactory, version_id: int, fmt: Literal["yaml", "json"] = "yaml"
) -> str:
    version = get_version(sessions, version_id)
    rubric = Rubric(version.to_criteria())
    return rubric.to_json() if fmt == "json" else rubric.to_yaml()


def get_version(sessions: SessionFactory, version_id: int) -> RubricVersionInfo:
    with sessions() as session:
        return version_info(repo.get_version(session, version_id))


def latest_version(sessions: SessionFactory, rubric_id: int) -> RubricVersionInfo:
    with sessions() as session:
        return version_info(repo.latest_version(session, rubric_id))


def list_versions(sessions: SessionFactory, rubric_id: int) -> list[RubricVersionInfo]:
    with sessions() as session:
        repo.get_rubric(session, rubric_id)
        return [version_info(v) for v in repo.list_versions(session, rubric_id)]


def list_rubrics(sessions: SessionFactory, *, include_archived: bool = False) -> list[RubricInfo]:
    with sessions() as session:
        return [
            RubricInfo(
                id=row.id, name=row.name, description=row.description, archived=row.archived,
                created_at=row.created_at, version_count=count, latest_version_id=latest,
            )
            for row, count, latest in repo.list_rubrics(session, include_archived=include_archived)
        ]


def save_criteria(
    sessions: SessionFactory, version_id: int, criteria: Sequence[Criterion] | Rubric, *,
    note: str = "", expected: Sequence[Criterion] | None = None, actor: Actor,
) -> RubricVersionInfo:
    """Edit a version's criteria. A frozen version is left as it is and a new version is
    created instead; the returned version says which one holds the criteria.

    ``expected``: the criteria the edit started from. When a draft no longer holds them
    (another tab or person saved it meanwhile) nothing is saved: InvalidStateError."""
    require(actor, Role.ADMIN, "edit a rubric")
    criteria = _validated(criteria)
    limits.check([("the note", note, None)])
    from storage.services.save_retry import retry_until_saved

    # Two edits of a frozen version at once on SQLite both number their new version
    # max + 1; the second collides (or finds its snapshot stale) and runs again, landing as
    # the next number. PostgreSQL serialises them on the version row (FOR UPDATE).
    return retry_until_saved(lambda: _save_criteria(sessions, version_id, criteria, note,
                                                    expected, actor))


def _save_criteria(sessions: SessionFactory, version_id: int, criteria: list[Criterion],
                   note: str, expected: Sequence[Criterion] | None,
                   actor: Actor) -> RubricVersionInfo:
    with sessions.begin() as session:
        version = repo.get_version(session, version_id, for_update=True)
        if version.frozen_at is None:
            if expected is not None and version_info(version).to_criteria() != list(expected):
                raise InvalidStateError(
                    f"version {version.number} was changed elsewhere (another tab or person) "
                    "since you opened it; discard your changes to load the saved criteria, "
                    "then make your edits again")
            # Verdicts of earlier versions may carry into this one (same requirement text):
            # its effective verdicts go with the old criteria and are recomputed for the new.
            effective_upkeep.forget_versions(session, [version.id])
            repo.replace_criteria(session, version, criteria)
            if note:
                version.note = note
            session.flush()
            effective_upkeep.refresh_versions(session, [version.id])
            return version_info(version)
        added = repo.add_version(session, version.rubric, criteria, note, actor.key)
        effective_upkeep.refresh_versions(session, [added.id])
        return version_info(added)


def freeze_version(
    sessions: SessionFactory, version_id: int, *, actor: Actor
) -> RubricVersionInfo:
    require(actor, Role.ADMIN, "freeze a rubric version")
    with sessions.begin() as session:
        version = repo.get_version(session, version_id, for_update=True)
        if version.frozen_at is None:
            version.frozen_at = m.utcnow()
        return version_info(version)


def rename_rubric(sessions: SessionFactory, rubric_id: int, name: str, *, actor: Actor) -> None:
    require(actor, Role.ADMIN, "rename a rubric")
    name = _clean_name(name, "rubric")
    try:
        with sessions.begin() as session:
            repo.get_rubric(session, rubric_id).name = name
    except IntegrityError:
        raise NameTakenError(f"a rubric named {name!r} already exists; pick another name") from None


def archive_rubric(
    sessions: SessionFactory, rubric_id: int, archived: bool = True, *, actor: Actor
) -> None:
    """Hide a rubric from lists; everything it holds stays. The safe alternative to delete."""
    require(actor, Role.ADMIN, "archive a rubric" if archived else "restore a rubric")
    with sessions.begin() as session:
        row = repo.get_rubric(session, rubric_id)
        if row.archived != archived:
            record(session, actor, "archive" if archived else "restore", "rubric", rubric_id,
                   row.name)
        row.archived = archived


def _deletion_summary(session: Session, rubric_id: int
                      ) -> tuple[list[int], list[int], DeletionSummary]:
    repo.get_rubric(session, rubric_id)
    version_ids = list(session.scalars(
        select(m.RubricVersionRow.id).where(m.RubricVersionRow.rubric_id == rubric_id)
    ))
    run_ids = list(session.scalars(
        select(m.RunRow.id).where(m.RunRow.rubric_version_id.in_(version_ids))
    ))
    comparisons, pair_reviews, pair_panels = comparison_repo.count_using(
        session, version_ids=version_ids)
    return version_ids, run_ids, DeletionSummary(
        runs=len(run_ids), grades=_count_grades(session, run_ids), responses=0,
        human_verdicts=verdict_repo.count_for_versions(session, version_ids) + pair_reviews,
        comparisons=comparisons, panels=count_panels(session, run_ids),
        pair_panels=pair_panels)


def deletion_summary(sessions: SessionFactory, rubric_id: int) -> DeletionSummary:
    """What deleting the rubric would remove: pages offer only what can be done (a rubric
    with human verdicts can only be archived)."""
    with sessions() as session:
        return _deletion_summary(session, rubric_id)[2]


def delete_rubric(
    sessions: SessionFactory, rubric_id: int, *, confirm: bool = False,
    delete_human_verdicts: bool = False, actor: Actor,
) -> DeletionSummary:
    """Delete a rubric, its versions, runs and grades.

    With results, ``confirm=True`` is required; with human verdicts, also
    ``delete_human_verdicts=True`` (a library-only switch: the app never deletes people's
    verdicts; it archives instead).
    """
    require(actor, Role.ADMIN, "delete a rubric")
    with sessions.begin() as session:
        rubric_name = repo.get_rubric(session, rubric_id).name
        version_ids, run_ids, summary = _deletion_summary(session, rubric_id)
        human_count, grade_count = summary.human_verdicts, summary.grades
        if human_count and not delete_human_verdicts:
            raise HumanVerdictsExistError(
                f"this rubric has {human_count} human verdict"
                f"{'s' if human_count != 1 else ''}, and people's verdicts are never deleted "
                "with it; archive it instead to hide it from lists"
            )
        if (run_ids or human_count or summary.comparisons) and not confirm:
            raise ConfirmationRequiredError(
                f"this rubric has {len(run_ids)} grading runs with {grade_count} grades and "
                f"{summary.comparisons} comparisons{summary.panels_words()}; confirm the "
                "deletion (confirm=True) or archive it instead"
            )
        effective_upkeep.forget_versions(session, version_ids)
        session.execute(delete(m.HumanVerdictRow)
                        .where(m.HumanVerdictRow.rubric_version_id.in_(version_ids)))
        delete_runs(session, run_ids)
        comparison_repo.delete_using(session, version_ids=version_ids)
        session.execute(delete(m.RubricRow).where(m.RubricRow.id == rubric_id))
        record(session, actor, "delete", "rubric", rubric_id, rubric_name, _deleted(summary))
        return summary


def _deleted(summary: DeletionSummary) -> str:
    return (f"with {summary.runs} runs, {summary.grades} grades, {summary.responses} responses, "
            f"{summary.human_verdicts} human verdicts, {summary.comparisons} comparisons"
            f"{summary.panels_words()}")


def _count_grades(session: Session, run_ids: list[int]) -> int:
    if not run_ids:
        return 0
    return session.scalar(
        select(func.count()).select_from(m.GradeRow).where(m.GradeRow.run_id.in_(run_ids))
    ) or 0
