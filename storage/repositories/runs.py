"""Grading runs, the responses they cover, and their grades."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Select, func, insert, literal, null, select, update
from sqlalchemy.orm import Session, selectinload

from grading.types import Verdict
from storage import models as m
from storage.dto import CriterionGradeInfo, GradeInfo
from storage.errors import NotFoundError
from storage.id_chunks import id_chunks
from storage.plain_rows import plain_rows
from storage.repositories.locks import take_sqlite_write_lock


def get_run(session: Session, run_id: int, *, for_update: bool = False) -> m.RunRow:
    query = select(m.RunRow).where(m.RunRow.id == run_id)
    if for_update:
        query = query.with_for_update()
        take_sqlite_write_lock(session, m.RunRow, run_id)
    row = session.scalars(query).one_or_none()
    if row is None:
        raise NotFoundError(f"grading run {run_id} does not exist")
    return row


def list_runs(
    session: Session,
    *,
    rubric_version_id: int | None = None,
    dataset_id: int | None = None,
    statuses: Sequence[str] | None = None,
) -> list[m.RunRow]:
    query = select(m.RunRow).order_by(m.RunRow.id)
    if rubric_version_id is not None:
        query = query.where(m.RunRow.rubric_version_id == rubric_version_id)
    if dataset_id is not None:
        query = query.where(m.RunRow.dataset_id == dataset_id)
    if statuses:
        query = query.where(m.RunRow.status.in_(list(statuses)))
    return list(session.scalars(query))


# Ids per statement when a run's responses are listed: the parameters of one statement are
# held in memory at once (a dict per row), so a large run is written in slices.
ID_BATCH = 1000


def add_run_responses(session: Session, run_id: int, response_ids: Sequence[int]) -> None:
    for start in range(0, len(response_ids), ID_BATCH):
        session.execute(insert(m.RunResponseRow), [
            {"run_id": run_id, "response_id": r}
            for r in response_ids[start:start + ID_BATCH]])


def add_dataset_to_run(session: Session, run_id: int, dataset_id: int) -> None:
    """Every response of the dataset becomes the run's, copied by the database itself."""
    session.execute(insert(m.RunResponseRow).from_select(
        ["run_id", "response_id"],
        select(literal(run_id), m.ResponseRow.id).where(m.ResponseRow.dataset_id == dataset_id)))


def run_response_count(session: Session, run_id: int) -> int:
    return session.scalar(select(func.count()).select_from(m.RunResponseRow)
                          .where(m.RunResponseRow.run_id == run_id)) or 0


def outside_dataset(session: Session, dataset_id: int, response_ids: Sequence[int]
                    ) -> list[int]:
    """The ids that are not responses of this dataset, sorted (read a slice at a time)."""
    outside: list[int] = []
    for part in id_chunks(response_ids, ID_BATCH):
        found = set(session.scalars(select(m.ResponseRow.id).where(
            m.ResponseRow.dataset_id == dataset_id, m.ResponseRow.id.in_(part))))
        outside.extend(r for r in part if r not in found)
    return sorted(outside)


def graded_ids_after(session: Session, run_id: int, after: int, limit: int) -> list[int]:
    """The next ``limit`` response ids the run has graded, above ``after`` (keyset paging)."""
    return list(session.scalars(
        select(m.GradeRow.response_id)
        .where(m.GradeRow.run_id == run_id, m.GradeRow.response_id > after)
        .order_by(m.GradeRow.response_id).limit(limit)))


def pending_response_ids(session: Session, run_id: int) -> list[int]:
    graded = select(m.GradeRow.response_id).where(m.GradeRow.run_id == run_id)
    return list(session.scalars(
        select(m.RunResponseRow.response_id)
        .where(m.RunResponseRow.run_id == run_id, m.RunResponseRow.response_id.not_in(graded))
        .order_by(m.RunResponseRow.response_id)
    ))


def add_totals(session: Session, run_id: int, **increments: float) -> None:
    """Atomic ``column = column + n`` updates: concurrent writers never lose a count."""
    # On the table, not the ORM entity: no session synchronisation for a counter bump.
    table = m.RunRow.__table__
    values = {name: table.c[name] + amount for name, amount in increments.items()}
    session.execute(update(table).where(table.c.id == run_id).values(**values))


def get_grade(session: Session, grade_id: int) -> m.GradeRow:
    row = session.scalars(
        select(m.GradeRow).where(m.GradeRow.id == grade_id)
        .options(selectinload(m.GradeRow.criteria))
    ).one_or_none()
    if row is None:
        raise NotFoundError(f"grade {grade_id} does not exist")
    return row


def grades_for_run(
    session: Session, run_id: int, response_ids: Sequence[int] | None = None
) -> list[m.GradeRow]:
    query = (
        select(m.GradeRow).where(m.GradeRow.run_id == run_id)
        .options(selectinload(m.GradeRow.criteria)).order_by(m.GradeRow.response_id)
    )
    if response_ids is not None:
        query = query.where(m.GradeRow.response_id.in_(list(response_ids)))
    return list(session.scalars(query))


def grades_for_response(
    session: Session, response_id: int, rubric_version_id: int | None = None
) -> list[tuple[m.GradeRow, m.RunRow]]:
    query = (
        select(m.GradeRow, m.RunRow)
        .join(m.RunRow, m.RunRow.id == m.GradeRow.run_id)
        .where(m.GradeRow.response_id == response_id)
        .options(selectinload(m.GradeRow.criteria))
        .order_by(m.GradeRow.run_id)
    )
    if rubric_version_id is not None:
        query = query.where(m.RunRow.rubric_version_id == rubric_version_id)
    return [(g, r) for g, r in session.execute(query)]


_GRADE_COLUMNS = (
    m.GradeRow.id, m.GradeRow.run_id, m.GradeRow.response_id, m.GradeRow.score,
    m.GradeRow.raw_score, m.GradeRow.llm_raw_score, m.GradeRow.error,
    m.GradeRow.cannot_assess_count, m.GradeRow.length_penalty, m.GradeRow.prompt_tokens,
    m.GradeRow.completion_tokens, m.GradeRow.total_tokens, m.GradeRow.cost,
    m.GradeRow.latency_s, m.GradeRow.created_at, m.GradeRow.reason,
)


@dataclass(frozen=True)
class RunVerdicts:
    """What agreement reads of a run, and nothing more: each grade's score (None: failed),
    and each criterion's choice (the option label if one was chosen, else the verdict) with
    its reason. No JSON columns (samples, shuffles) are decoded and no objects are built
    per criterion: a whole run at 100,000s of verdicts."""

    scores: dict[int, float | None]  # response id -> score, one entry per grade
    choices: dict[tuple[int, int], Verdict | str]  # (response, criterion) -> choice
    reasons: dict[tuple[int, int], str]


def run_verdicts(session: Session, run_id: int, within: Select | None = None,
                 scores: bool = True, key=None, reasons: bool = True) -> RunVerdicts:
    """``within``: a query of response ids; only their verdicts and reasons are read (None:
    every response's). Scores are read for every response (one row per grade); ``scores``
    False: not read (the caller holds them: storage.services.agreement_inputs). ``key``:
    as ``_choices`` takes it. ``reasons`` False: not read (``RunVerdicts.reasons`` empty)."""
    grades_query = (select(m.GradeRow.response_id, m.GradeRow.score)
                    .where(m.GradeRow.run_id == run_id).order_by(m.GradeRow.response_id))
    # Core rows, not ORM ones (half the CPU per row): 100,000s of grades per run
    found = ({rid: score for rid, score in plain_rows(session.connection(), grades_query)}
             if scores else {})
    where = () if within is None else (m.GradeRow.response_id.in_(within),)
    choices, reasons_found = _choices(session, run_id, where, key, reasons)
    return RunVerdicts(found, choices, reasons_found)


def run_choices(session: Session, run_id: int, response_ids: Sequence[int],
                reasons: bool = True
                ) -> tuple[dict[tuple[int, int], Verdict | str], dict[tuple[int, int], str]]:
    """``run_verdicts``' choices and reasons of these responses only, without the scores
    (``reasons`` False: not read, an empty dict)."""
    return _choices(session, run_id, (m.GradeRow.response_id.in_(list(response_ids)),),
                    reasons=reasons)


def _choices(session: Session, run_id: int, where: Sequence = (), key=None,
             reasons: bool = True
             ) -> tuple[dict[tuple[int, int], Verdict | str], dict[tuple[int, int], str]]:
    """The run's choices (and reasons) of the grades ``where`` keeps. ``key``: makes a
    (response, criterion) key (a storage.key_pool.KeyPool: one tuple per key shared with
    other dicts); each key is one tuple in both dicts either way. ``reasons`` False: the
    reasons are not read (NULL in the query), none kept."""
    rows_query = (
        select(m.GradeRow.response_id, m.GradeCriterionRow.criterion_id,
               m.GradeCriterionRow.verdict, m.GradeCriterionRow.option,
               m.GradeCriterionRow.reason if reasons else null())
        .join(m.GradeRow, m.GradeRow.id == m.GradeCriterionRow.grade_id)
        .where(m.GradeRow.run_id == run_id, *where)
        # the order grade_infos_for_run gives: by response, then the criterion's position
        .order_by(m.GradeRow.response_id, m.GradeCriterionRow.position))
    choices: dict[tuple[int, int], Verdict | str] = {}
    read: dict[tuple[int, int], str] = {}
    verdict_of = {v.value: v for v in Verdict}
    for rid, cid, verdict, option, reason in plain_rows(session.connection(), rows_query):
        choice = option if option is not None else (
            None if verdict is None else verdict_of[verdict])
        if choice is not None:
            found = (rid, cid) if key is None else key(rid, cid)
            choices[found] = choice
            if reasons:
                read[found] = reason
    return choices, read


def grade_infos_for_run(
    session: Session, run_id: int, response_ids: Sequence[int] | None = None
) -> list[GradeInfo]:
    """A run's grades as plain objects, read as rows rather than ORM instances: a whole
    run's effective scores are computed from these, so this path stays fast at 10,000s."""
    if response_ids is None:
        return _grade_infos(session, run_id, None)
    ids = list(response_ids)
    found: list[GradeInfo] = []
    for chunk in id_chunks(ids):
        found.extend(_grade_infos(session, run_id, chunk))
    return sorted(found, key=lambda g: g.response_id)


def _grade_infos(session: Session, run_id: int, ids: list[int] | None) -> list[GradeInfo]:
    query = select(*_GRADE_COLUMNS).where(m.GradeRow.run_id == run_id)
    if ids is not None:
        query = query.where(m.GradeRow.response_id.in_(ids))
    grades = session.execute(query.order_by(m.GradeRow.response_id)).all()
    criteria_query = (
        select(m.GradeCriterionRow.grade_id, m.GradeCriterionRow.criterion_id,
               m.GradeCriterionRow.position, m.GradeCriterionRow.verdict,
               m.GradeCriterionRow.reason, m.GradeCriterionRow.error,
               m.GradeCriterionRow.option, m.GradeCriterionRow.shuffle_order,
               m.GradeCriterionRow.samples, m.GradeCriterionRow.prompt_position)
        .join(m.GradeRow, m.GradeRow.id == m.GradeCriterionRow.grade_id)
        .where(m.GradeRow.run_id == run_id)
        .order_by(m.GradeCriterionRow.grade_id, m.GradeCriterionRow.position)
    )
    if ids is not None:
        criteria_query = criteria_query.where(m.GradeRow.response_id.in_(ids))
    by_grade: dict[int, list[CriterionGradeInfo]] = {}
    for (grade_id, criterion_id, position, verdict, reason, error, option,
         shuffle_order, samples, prompt_position) in session.execute(criteria_query):
        by_grade.setdefault(grade_id, []).append(CriterionGradeInfo(
            criterion_id=criterion_id, position=position,
            verdict=None if verdict is None else Verdict(verdict), reason=reason, error=error,
            option=option, shuffle_order=None if shuffle_order is None else tuple(shuffle_order),
            samples=None if samples is None else tuple(samples),
            prompt_position=prompt_position,
        ))
    return [
        GradeInfo(*row[:-1], criteria=tuple(by_grade.get(row[0], ())), reason=row[-1])
        for row in grades
    ]
