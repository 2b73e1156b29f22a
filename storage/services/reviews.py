"""Human verdicts (append-only, concurrency-safe) and the effective scores they produce."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Final

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from grading.types import ScoringSettings, Verdict
from storage import limits
from storage import models as m
from storage.convert import criterion_info, grade_info, human_verdict_info
from storage.dto import EffectiveGrade, HumanScore, HumanVerdictInfo
from storage.effective import compute_effective_grade, compute_human_score
from storage.engine import SessionFactory
from storage.errors import InvalidInputError, NotFoundError, StaleVerdictError
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as run_repo
from storage.repositories import verdicts as repo
from storage.run_settings import RunSettings


class _Unchecked:
    def __repr__(self) -> str:
        return "UNCHECKED"


UNCHECKED: Final = _Unchecked()
_MAX_ATTEMPTS = 10


def set_human_verdict(
    sessions: SessionFactory, *, response_id: int, criterion_id: int, verdict: Verdict | str,
    reviewer: str, note: str = "", expected_current_id: int | _Unchecked | None = UNCHECKED,
) -> HumanVerdictInfo:
    """Append a reviewer's verdict on one criterion of one response.

    ``expected_current_id`` is the id of the current verdict the form showed (None: the
    form showed no verdict). If the current verdict changed since, StaleVerdictError is
    raised and nothing is written. Without it, concurrent writers are serialised: every
    verdict lands in the history, the last one written is current.
    """
    try:
        parsed = Verdict.parse(verdict)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None
    reviewer = reviewer.strip()
    if not reviewer:
        raise InvalidInputError("enter your name as reviewer before saving a verdict")
    limits.check([("the reviewer name", reviewer, limits.NAME_MAX), ("the note", note, None)])
    for _attempt in range(_MAX_ATTEMPTS):
        try:
            with sessions.begin() as session:
                return append_verdict(session, response_id, criterion_id, parsed, reviewer,
                               note or "", expected_current_id)
        except OperationalError as exc:
            # SQLite under heavy contention can give up on the write lock; the whole
            # transaction (including the stale-form check) simply runs again.
            if "locked" not in str(exc).lower():
                raise
        except IntegrityError as exc:
            if "unique" not in str(exc.orig).lower():
                raise
            # Someone appended the same seq first. With a form check that is a stale form;
            # otherwise re-read and append after them.
            if not isinstance(expected_current_id, _Unchecked):
                with sessions() as session:
                    current = repo.latest(session, response_id, criterion_id)
                raise _stale(current) from None
    raise StaleVerdictError(
        "the verdict kept changing while saving; reload and try again", current_id=None)


def _stale(current: m.HumanVerdictRow | None) -> StaleVerdictError:
    if current is None:
        return StaleVerdictError("the verdict changed while you were reviewing; reload",
                                 current_id=None)
    return StaleVerdictError(
        f"{current.reviewer} changed this verdict to {current.verdict} at "
        f"{current.created_at:%Y-%m-%d %H:%M} UTC while you were reviewing; reload to see "
        "it and decide again",
        current_id=current.id,
    )


def append_verdict(
    session: Session, response_id: int, criterion_id: int, verdict: Verdict, reviewer: str,
    note: str, expected_current_id: int | _Unchecked | None,
) -> HumanVerdictInfo:
    """Add one human verdict inside the caller's transaction: the one write path that the
    Review page (set_human_verdict) and the CSV import share."""
    found = rubric_repo.criterion_with_frozen(session, criterion_id)
    if found is None:
        raise NotFoundError(f"criterion {criterion_id} does not exist")
    criterion, frozen = found
    dataset_repo.require_response(session, response_id)
    current = repo.latest(session, response_id, criterion_id)
    checked = not isinstance(expected_current_id, _Unchecked)
    if checked and (current.id if current else None) != expected_current_id:
        raise _stale(current)
    if not frozen:
        rubric_repo.freeze(session, criterion.version_id)
    row = repo.append(
        session, response_id=response_id, rubric_version_id=criterion.version_id,
        criterion_id=criterion_id, verdict=verdict.value, reviewer=reviewer, note=note,
        previous=current,
    )
    return human_verdict_info(row, current)


def verdict_history(
    sessions: SessionFactory, response_id: int, *, rubric_version_id: int | None = None,
    criterion_id: int | None = None,
) -> list[HumanVerdictInfo]:
    """Who changed what from what to what, when and why; oldest first per criterion."""
    with sessions() as session:
        return [human_verdict_info(row, prev) for row, prev in repo.history(
            session, response_id, rubric_version_id=rubric_version_id,
            criterion_id=criterion_id)]


def current_verdicts(
    sessions: SessionFactory, response_id: int, rubric_version_id: int
) -> dict[int, HumanVerdictInfo]:
    """The current human verdict per criterion id (reviewed criteria only)."""
    with sessions() as session:
        return {row.criterion_id: human_verdict_info(row, prev) for row, prev in
                repo.current_for_responses(session, [response_id], rubric_version_id)}


def effective_grades_for_response(
    sessions: SessionFactory, response_id: int, rubric_version_id: int | None = None
) -> list[EffectiveGrade]:
    """Every run's grade of this response with current human verdicts applied."""
    with sessions() as session:
        pairs = run_repo.grades_for_response(session, response_id, rubric_version_id)
        if not pairs:
            dataset_repo.require_response(session, response_id)
            return []
        by_version: dict[int, list[tuple[m.GradeRow, RunSettings]]] = defaultdict(list)
        for grade, run in pairs:
            by_version[run.rubric_version_id].append(
                (grade, RunSettings.model_validate(run.settings)))
        # The (possibly large) text is only read when a length penalty needs it.
        needs_text = any(s.length_penalty is not None for items in by_version.values()
                         for _g, s in items)
        to_grade = _texts(session, [response_id]).get(response_id, "") if needs_text else ""
        results: list[EffectiveGrade] = []
        for version_id, items in by_version.items():
            criteria = [criterion_info(c) for c in rubric_repo.criteria_of(session, version_id)]
            humans = {row.criterion_id: human_verdict_info(row, prev) for row, prev in
                      repo.current_for_responses(session, [response_id], version_id)}
            for grade, settings in items:
                results.append(compute_effective_grade(
                    criteria=criteria, grade=grade_info(grade), settings=settings.scoring(),
                    to_grade=to_grade, humans=humans,
                ))
        return sorted(results, key=lambda g: g.run_id)


def effective_grade(sessions: SessionFactory, grade_id: int) -> EffectiveGrade:
    with sessions() as session:
        grade = run_repo.get_grade(session, grade_id)
        run_id = grade.run_id
    [result] = effective_grades_for_run(sessions, run_id, [grade.response_id])
    return result


def effective_grades_for_run(
    sessions: SessionFactory, run_id: int, response_ids: Sequence[int] | None = None
) -> list[EffectiveGrade]:
    """A run's grades (all, or for these responses) with human verdicts applied; a handful
    of queries whatever the number of grades."""
    with sessions() as session:
        run = run_repo.get_run(session, run_id)
        settings = RunSettings.model_validate(run.settings).scoring()
        criteria = [criterion_info(c) for c in rubric_repo.criteria_of(
            session, run.rubric_version_id)]
        grades = run_repo.grade_infos_for_run(session, run_id, response_ids)
        ids = [g.response_id for g in grades]
        humans: dict[int, dict] = defaultdict(dict)
        for row, prev in repo.current_for_responses(session, ids, run.rubric_version_id):
            humans[row.response_id][row.criterion_id] = human_verdict_info(row, prev)
        texts = _texts(session, ids) if settings.length_penalty is not None else {}
        return [
            compute_effective_grade(
                criteria=criteria, grade=g, settings=settings,
                to_grade=texts.get(g.response_id, ""), humans=humans.get(g.response_id, {}),
            )
            for g in grades
        ]


def _texts(session: Session, response_ids: list[int]) -> dict:
    # Only read the (possibly large) texts when a length penalty needs them.
    found = {}
    for start in range(0, len(response_ids), 500):
        for rid, output, thinking in session.execute(
            select(m.ResponseRow.id, m.ResponseRow.output, m.ResponseRow.thinking)
            .where(m.ResponseRow.id.in_(response_ids[start:start + 500]))
        ):
            # Passed as parts: an uploaded output is never re-parsed for <output> tags.
            found[rid] = {"thinking": thinking or "", "output": output}
    return found


def human_score(
    sessions: SessionFactory, response_id: int, rubric_version_id: int,
    settings: ScoringSettings | None = None,
) -> HumanScore:
    """The score of a response from human verdicts alone (None until all are reviewed)."""
    [result] = human_scores(sessions, rubric_version_id, [response_id], settings)
    return result


def human_scores(
    sessions: SessionFactory, rubric_version_id: int, response_ids: Sequence[int],
    settings: ScoringSettings | None = None,
) -> list[HumanScore]:
    settings = settings or ScoringSettings()
    ids = list(response_ids)
    with sessions() as session:
        rubric_repo.get_version(session, rubric_version_id)  # NotFoundError if missing
        criteria = [criterion_info(c) for c in rubric_repo.criteria_of(
            session, rubric_version_id)]
        humans: dict[int, dict] = defaultdict(dict)
        for row, prev in repo.current_for_responses(session, ids, rubric_version_id):
            humans[row.response_id][row.criterion_id] = human_verdict_info(row, prev)
        texts = _texts(session, ids) if settings.length_penalty is not None else {}
        missing = set(ids) - set(_existing_ids(session, ids))
        if missing:
            raise NotFoundError(f"responses do not exist: {sorted(missing)[:10]}")
        return [
            compute_human_score(
                response_id=rid, rubric_version_id=rubric_version_id, criteria=criteria,
                humans=humans.get(rid, {}), settings=settings, to_grade=texts.get(rid),
            )
            for rid in ids
        ]


def _existing_ids(session: Session, ids: list[int]) -> list[int]:
    found: list[int] = []
    for start in range(0, len(ids), 500):
        found.extend(session.scalars(
            select(m.ResponseRow.id).where(m.ResponseRow.id.in_(ids[start:start + 500]))))
    return found
