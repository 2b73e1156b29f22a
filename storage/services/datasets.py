"""Datasets and responses: create, import (all or nothing), list, archive, delete."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from storage import limits
from storage import models as m
from storage.convert import dataset_info, response_info
from storage.dto import DatasetInfo, DeletionSummary, ResponseInfo
from storage.engine import SessionFactory
from storage.errors import (
    ConfirmationRequiredError,
    HumanVerdictsExistError,
    ImportProblemsError,
    InvalidInputError,
    NameTakenError,
    Problem,
)
from storage.export_names import response_key
from storage.repositories import comparisons as comparison_repo
from storage.repositories import datasets as repo
from storage.repositories import results as results_repo
from storage.repositories import verdicts as verdict_repo
from storage.response_files import ColumnMapping, NewResponse, ResponseValidator
from storage.services import effective_upkeep
from storage.services.people import record
from storage.services.reviewers import Actor, Role, require
from storage.services.run_cleanup import count_panels, delete_runs

_BATCH = 1000  # rows inserted at a time, all in the import's one transaction
_PEEK = 1000  # rows looked at to guess the column mapping of raw rows


def _name_taken(name: str) -> NameTakenError:
    return NameTakenError(f"a dataset named {name!r} already exists; pick another name")


def create_dataset(
    sessions: SessionFactory, name: str, *, description: str = "",
    responses: Iterable[NewResponse | Mapping[str, Any]] = (),
    mapping: ColumnMapping | None = None, actor: Actor,
) -> DatasetInfo:
    """A new dataset, with its responses if given; on any problem nothing is written.

    ``responses`` may be a stream (``response_files.iter_responses``): rows are validated and
    stored a batch at a time in one transaction, so memory does not grow with the rows.
    """
    require(actor, Role.ADMIN, "create a dataset")
    name = name.strip()
    if not name:
        raise InvalidInputError("a dataset needs a name")
    limits.check([("the dataset name", name, limits.NAME_MAX),
                  ("the description", description, None)])
    try:
        with sessions.begin() as session:
            if repo.find_dataset_by_name(session, name) is not None:
                raise _name_taken(name)
            row = m.DatasetRow(name=name, description=description, imported_by=actor.key)
            session.add(row)
            session.flush()
            count = _store(session, row.id, responses, mapping, new=True, keep_ids=False)
            if count:
                record(session, actor, "import responses", "dataset", row.id, name,
                       f"{count} responses")
            else:
                record(session, actor, "create", "dataset", row.id, name)
            return dataset_info(row, count)
    except IntegrityError:
        raise _name_taken(name) from None


def import_responses(
    sessions: SessionFactory, dataset_id: int,
    responses: Iterable[NewResponse | Mapping[str, Any]],
    mapping: ColumnMapping | None = None, *, actor: Actor,
) -> list[int]:
    """Add responses to a dataset in one transaction; returns their ids, in order.

    Raises ImportProblemsError listing every problem (with its row or line) and writes
    nothing if there is any, including ids already used in the dataset.
    """
    require(actor, Role.ADMIN, "import responses")
    with sessions.begin() as session:
        dataset = repo.get_dataset(session, dataset_id)
        try:
            ids = _store(session, dataset_id, responses, mapping, new=False, keep_ids=True)
        except IntegrityError:  # a concurrent import took an id in the meantime
            raise ImportProblemsError([Problem("", "another import added the same ids; "
                                                   "nothing was imported, try again")]) from None
        record(session, actor, "import responses", "dataset", dataset_id, dataset.name,
               f"{len(ids)} responses")
    return ids


def add_response(
    sessions: SessionFactory, dataset_id: int, output: str, *, query: str | None = None,
    thinking: str | None = None, external_id: str | None = None,
    metadata: dict[str, Any] | None = None, reference: str | None = None, actor: Actor,
) -> ResponseInfo:
    """Add one pasted response (``reference``: the reference answer, if any)."""
    require(actor, Role.ADMIN, "add a response")
    row = {"text": output, "query": query, "thinking": thinking, "id": external_id,
           "reference": reference}
    mapping = ColumnMapping(text="text", query="query", thinking="thinking", id="id",
                            reference="reference")
    validator = ResponseValidator(mapping)
    validated, problems = validator.check(row, "")
    problem = limits.value_problem(dict(metadata or {}))
    if problem:
        problems.append(Problem("", f"metadata {problem}"))
    if problems or validated is None:
        raise ImportProblemsError(problems)
    validated = replace(validated, metadata=dict(metadata or {}))
    [response_id] = import_responses(sessions, dataset_id, [validated], actor=actor)
    return get_response(sessions, response_id)


def _validated(
    responses: Iterable[NewResponse | Mapping[str, Any]], mapping: ColumnMapping | None,
    problems: list[Problem],
) -> Iterator[NewResponse]:
    """Responses as they come, raw rows validated (problems are appended, not raised)."""
    items = iter(responses)
    peeked = list(itertools.islice(items, _PEEK))
    if mapping is None:
        columns: dict[str, None] = {}
        for item in peeked:
            if isinstance(item, Mapping):
                columns.update(dict.fromkeys(item))
        mapping = ColumnMapping.guess(list(columns))
    validator = ResponseValidator(mapping)
    for index, item in enumerate(itertools.chain(peeked, items)):
        if isinstance(item, NewResponse):
            yield item
            continue
        response, found = validator.check(item, f"row {index + 1}")
        problems.extend(found)
        if response is not None:
            yield response


def _store(
    session: Session, dataset_id: int, responses: Iterable[NewResponse | Mapping[str, Any]],
    mapping: ColumnMapping | None, *, new: bool, keep_ids: bool,
) -> Any:
    """Validate and insert a batch at a time; raise (rolling everything back) on any problem.
    Returns the new ids (``keep_ids``) or their number."""
    problems: list[Problem] = []
    ids: list[int] = []
    count = 0
    batch: list[NewResponse] = []

    def flush() -> None:
        nonlocal count
        in_batch: dict[str, str] = {}
        for r in batch:
            if r.external_id is None:
                continue
            if r.external_id in in_batch:
                problems.append(Problem(r.location, f"id {r.external_id!r} is already used "
                                                    f"by {in_batch[r.external_id]}"))
            in_batch.setdefault(r.external_id, r.location)
        taken = repo.existing_external_ids(session, dataset_id, in_batch) if in_batch else set()
        for r in batch:
            if r.external_id in taken:
                problems.append(Problem(r.location, f"id {r.external_id!r} is already "
                                        + ("used by an earlier row" if new
                                           else "in this dataset")))
        if not problems and keep_ids:
            ids.extend(repo.add_responses(session, dataset_id, [_columns(r) for r in batch]))
        elif not problems:
            repo.insert_responses(session, dataset_id, [_columns(r) for r in batch])
        count += len(batch)
        batch.clear()

    try:
        for response in _validated(responses, mapping, problems):
            batch.append(response)
            if len(batch) >= _BATCH:
                flush()
        if batch:
            flush()
    except ImportProblemsError as exc:  # a file stream found problems at its end
        raise ImportProblemsError([*problems, *exc.problems], source=exc.source) from None
    if problems:
        raise ImportProblemsError(problems)
    return ids if keep_ids else count


def _columns(response: NewResponse) -> dict[str, Any]:
    return {
        "external_id": response.external_id, "query": response.query,
        "output": response.output, "thinking": response.thinking,
        "reference": response.reference, "meta": response.metadata, "created_at": m.utcnow(),
    }


def get_dataset(sessions: SessionFactory, dataset_id: int) -> DatasetInfo:
    with sessions() as session:
        row = repo.get_dataset(session, dataset_id)
        return dataset_info(row, repo.response_count(session, dataset_id))


def list_datasets(sessions: SessionFactory, *, include_archived: bool = False) -> list[DatasetInfo]:
    with sessions() as session:
        return [dataset_info(row, n)
                for row, n in repo.list_datasets(session, include_archived=include_archived)]


def list_responses(
    sessions: SessionFactory, dataset_id: int, *, offset: int = 0, limit: int | None = 100
) -> list[ResponseInfo]:
    with sessions() as session:
        return [response_info(r) for r in repo.list_responses(
            session, dataset_id, offset=offset, limit=limit)]


def search_responses(
    sessions: SessionFactory, dataset_id: int, search: str = "", *, offset: int = 0,
    limit: int = 25,
) -> tuple[int, list[ResponseInfo]]:
    """(how many match, one page of them in dataset order): the search (id, query or output
    containing the words, case-insensitive) and the paging both run in SQL."""
    if limit < 1 or offset < 0:
        raise InvalidInputError("page size must be at least 1 and the offset not negative")
    where = [m.ResponseRow.dataset_id == dataset_id]
    with sessions() as session:
        clause = results_repo.search_clause(search, session.get_bind().dialect.name)
        if clause is not None:
            where.append(clause)
        repo.get_dataset(session, dataset_id)
        total = session.scalar(select(func.count()).select_from(m.ResponseRow).where(*where))
        rows = session.scalars(select(m.ResponseRow).where(*where).order_by(m.ResponseRow.id)
                               .offset(offset).limit(limit))
        return total or 0, [response_info(r) for r in rows]


def get_response(sessions: SessionFactory, response_id: int) -> ResponseInfo:
    with sessions() as session:
        return response_info(repo.get_response(session, response_id))


def get_responses(sessions: SessionFactory, response_ids: Sequence[int]) -> list[ResponseInfo]:
    """Responses in the order asked (the job runner reads a batch at a time)."""
    with sessions() as session:
        return [response_info(r) for r in repo.get_responses(session, response_ids)]


def response_keys(sessions: SessionFactory, dataset_id: int) -> dict[int, str]:
    """The id users know each response by (``export_names.response_key``), by database id."""
    with sessions() as session:
        return {rid: response_key(rid, external) for rid, external in session.execute(
            select(m.ResponseRow.id, m.ResponseRow.external_id)
            .where(m.ResponseRow.dataset_id == dataset_id))}


def archive_dataset(
    sessions: SessionFactory, dataset_id: int, archived: bool = True, *, actor: Actor
) -> None:
    require(actor, Role.ADMIN, "archive a dataset" if archived else "restore a dataset")
    with sessions.begin() as session:
        row = repo.get_dataset(session, dataset_id)
        if row.archived != archived:
            record(session, actor, "archive" if archived else "restore", "dataset", dataset_id,
                   row.name)
        row.archived = archived


def _deletion_summary(session, dataset_id: int) -> tuple[list[int], DeletionSummary]:
    repo.get_dataset(session, dataset_id)
    run_ids = list(session.scalars(
        select(m.RunRow.id).where(m.RunRow.dataset_id == dataset_id)))
    grades = session.scalar(
        select(func.count()).select_from(m.GradeRow)
        .join(m.ResponseRow, m.ResponseRow.id == m.GradeRow.response_id)
        .where(m.ResponseRow.dataset_id == dataset_id)
    ) or 0
    comparisons, pair_reviews, pair_panels = comparison_repo.count_using(
        session, dataset_id=dataset_id)
    return run_ids, DeletionSummary(
        runs=len(run_ids), grades=grades, responses=repo.response_count(session, dataset_id),
        human_verdicts=verdict_repo.count_for_dataset(session, dataset_id) + pair_reviews,
        comparisons=comparisons, panels=count_panels(session, run_ids),
        pair_panels=pair_panels)


def deletion_summary(sessions: SessionFactory, dataset_id: int) -> DeletionSummary:
    """What deleting the dataset would remove: pages offer only what can be done (a dataset
    with human verdicts can only be archived)."""
    with sessions() as session:
        return _deletion_summary(session, dataset_id)[1]


def delete_dataset(
    sessions: SessionFactory, dataset_id: int, *, confirm: bool = False,
    delete_human_verdicts: bool = False, actor: Actor,
) -> DeletionSummary:
    """Delete a dataset with its responses, runs and grades.

    Grades need ``confirm=True``; human verdicts additionally ``delete_human_verdicts=True``
    (a library-only switch: the app never deletes people's verdicts).
    """
    require(actor, Role.ADMIN, "delete a dataset")
    with sessions.begin() as session:
        dataset_name = repo.get_dataset(session, dataset_id).name
        run_ids, summary = _deletion_summary(session, dataset_id)
        humans, grades = summary.human_verdicts, summary.grades
        if humans and not delete_human_verdicts:
            raise HumanVerdictsExistError(
                f"this dataset has {humans} human verdict{'s' if humans != 1 else ''}, and "
                "people's verdicts are never deleted with it; archive it instead to hide it "
                "from lists"
            )
        if (run_ids or grades or humans or summary.comparisons) and not confirm:
            raise ConfirmationRequiredError(
                f"this dataset has {len(run_ids)} grading runs with {grades} grades and "
                f"{summary.comparisons} comparisons{summary.panels_words()}; confirm the "
                "deletion (confirm=True) or archive it instead"
            )
        response_ids = select(m.ResponseRow.id).where(m.ResponseRow.dataset_id == dataset_id)
        effective_upkeep.forget_dataset(session, dataset_id)
        session.execute(delete(m.HumanVerdictRow)
                        .where(m.HumanVerdictRow.response_id.in_(response_ids)))
        delete_runs(session, run_ids)
        comparison_repo.delete_using(session, dataset_id=dataset_id)
        session.execute(delete(m.DatasetRow).where(m.DatasetRow.id == dataset_id))
        record(session, actor, "delete", "dataset", dataset_id, dataset_name,
               f"with {summary.responses} responses, {summary.runs} runs, {summary.grades} "
               f"grades, {summary.human_verdicts} human verdicts, {summary.comparisons} "
               f"comparisons{summary.panels_words()}")
        return summary
