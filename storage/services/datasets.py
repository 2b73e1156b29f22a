"""Datasets and responses: create, import (all or nothing), list, archive, delete."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError

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
from storage.repositories import datasets as repo
from storage.repositories import verdicts as verdict_repo
from storage.response_files import ColumnMapping, NewResponse, to_responses
from storage.services.people import record
from storage.services.reviewers import Actor, Role, require


def _name_taken(name: str) -> NameTakenError:
    return NameTakenError(f"a dataset named {name!r} already exists; pick another name")


def create_dataset(
    sessions: SessionFactory, name: str, *, description: str = "",
    responses: Sequence[NewResponse | Mapping[str, Any]] = (),
    mapping: ColumnMapping | None = None, actor: Actor,
) -> DatasetInfo:
    """A new dataset, with its responses if given; on any problem nothing is written."""
    require(actor, Role.ADMIN, "create a dataset")
    name = name.strip()
    if not name:
        raise InvalidInputError("a dataset needs a name")
    validated = _validate(responses, mapping)
    try:
        with sessions.begin() as session:
            if repo.find_dataset_by_name(session, name) is not None:
                raise _name_taken(name)
            row = m.DatasetRow(name=name, description=description, imported_by=actor.key)
            session.add(row)
            session.flush()
            repo.add_responses(session, row.id, [_columns(r) for r in validated])
            return dataset_info(row, len(validated))
    except IntegrityError:
        raise _name_taken(name) from None


def import_responses(
    sessions: SessionFactory, dataset_id: int,
    responses: Sequence[NewResponse | Mapping[str, Any]],
    mapping: ColumnMapping | None = None, *, actor: Actor,
) -> list[int]:
    """Add responses to a dataset in one transaction; returns their ids, in order.

    Raises ImportProblemsError listing every problem (with its row or line) and writes
    nothing if there is any, including ids already used in the dataset.
    """
    require(actor, Role.ADMIN, "import responses")
    validated = _validate(responses, mapping)
    with sessions.begin() as session:
        dataset = repo.get_dataset(session, dataset_id)
        ids = [r.external_id for r in validated if r.external_id is not None]
        taken = repo.existing_external_ids(session, dataset_id, ids)
        if taken:
            raise ImportProblemsError([
                Problem(r.location, f"id {r.external_id!r} is already in this dataset")
                for r in validated if r.external_id in taken
            ])
        try:
            ids = repo.add_responses(session, dataset_id, [_columns(r) for r in validated])
        except IntegrityError:  # a concurrent import took an id in the meantime
            raise ImportProblemsError([Problem("", "another import added the same ids; "
                                                   "nothing was imported, try again")]) from None
        record(session, actor, "import responses", "dataset", dataset_id, dataset.name,
               f"{len(ids)} responses")
    return ids


def add_response(
    sessions: SessionFactory, dataset_id: int, output: str, *, query: str | None = None,
    thinking: str | None = None, external_id: str | None = None,
    metadata: dict[str, Any] | None = None, actor: Actor,
) -> ResponseInfo:
    """Add one pasted response."""
    require(actor, Role.ADMIN, "add a response")
    row = {"text": output, "query": query, "thinking": thinking, "id": external_id}
    mapping = ColumnMapping(text="text", query="query", thinking="thinking", id="id")
    [validated] = _validate([row], mapping)
    validated = replace(validated, metadata=dict(metadata or {}))
    [response_id] = import_responses(sessions, dataset_id, [validated], actor=actor)
    return get_response(sessions, response_id)


def _validate(
    responses: Sequence[NewResponse | Mapping[str, Any]], mapping: ColumnMapping | None
) -> list[NewResponse]:
    """Validate raw rows (keeping the given order); raise with every problem found."""
    raw_positions = [i for i, r in enumerate(responses) if not isinstance(r, NewResponse)]
    problems: list[Problem] = []
    parsed_raw: dict[int, NewResponse] = {}
    if raw_positions:
        raw = [responses[i] for i in raw_positions]
        locations = [f"row {i + 1}" for i in raw_positions]
        parsed, problems = to_responses(raw, mapping, locations=locations)
        by_location = {p.location: p for p in parsed}
        parsed_raw = {i: by_location[loc] for i, loc in zip(raw_positions, locations,
                                                              strict=True) if loc in by_location}
    ready = [r if isinstance(r, NewResponse) else parsed_raw.get(i)
             for i, r in enumerate(responses)]
    seen: dict[str, str] = {}
    for r in ready:
        if r is None or r.external_id is None:
            continue
        if r.external_id in seen and seen[r.external_id] != r.location:
            problems.append(Problem(r.location, f"id {r.external_id!r} is already used by "
                                                f"{seen[r.external_id]}"))
        seen.setdefault(r.external_id, r.location)
    if problems:
        raise ImportProblemsError(problems)
    return [r for r in ready if r is not None]


def _columns(response: NewResponse) -> dict[str, Any]:
    return {
        "external_id": response.external_id, "query": response.query,
        "output": response.output, "thinking": response.thinking,
        "meta": response.metadata, "created_at": m.utcnow(),
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


def get_response(sessions: SessionFactory, response_id: int) -> ResponseInfo:
    with sessions() as session:
        return response_info(repo.get_response(session, response_id))


def get_responses(sessions: SessionFactory, response_ids: Sequence[int]) -> list[ResponseInfo]:
    """Responses in the order asked (the job runner reads a batch at a time)."""
    with sessions() as session:
        return [response_info(r) for r in repo.get_responses(session, response_ids)]


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


def delete_dataset(
    sessions: SessionFactory, dataset_id: int, *, confirm: bool = False,
    delete_human_verdicts: bool = False, actor: Actor,
) -> DeletionSummary:
    """Delete a dataset with its responses, runs and grades.

    Grades need ``confirm=True``; human verdicts additionally ``delete_human_verdicts=True``.
    """
    require(actor, Role.ADMIN, "delete a dataset")
    with sessions.begin() as session:
        dataset_name = repo.get_dataset(session, dataset_id).name
        run_ids = list(session.scalars(
            select(m.RunRow.id).where(m.RunRow.dataset_id == dataset_id)))
        grades = session.scalar(
            select(func.count()).select_from(m.GradeRow)
            .join(m.ResponseRow, m.ResponseRow.id == m.GradeRow.response_id)
            .where(m.ResponseRow.dataset_id == dataset_id)
        ) or 0
        humans = verdict_repo.count_for_dataset(session, dataset_id)
        summary = DeletionSummary(runs=len(run_ids), grades=grades,
                                  responses=repo.response_count(session, dataset_id),
                                  human_verdicts=humans)
        if humans and not delete_human_verdicts:
            raise HumanVerdictsExistError(
                f"this dataset has {humans} human verdicts; archive it instead, or pass "
                "delete_human_verdicts=True to delete them with it"
            )
        if (run_ids or grades or humans) and not confirm:
            raise ConfirmationRequiredError(
                f"this dataset has {len(run_ids)} grading runs with {grades} grades; "
                "confirm the deletion (confirm=True) or archive it instead"
            )
        response_ids = select(m.ResponseRow.id).where(m.ResponseRow.dataset_id == dataset_id)
        session.execute(delete(m.HumanVerdictRow)
                        .where(m.HumanVerdictRow.response_id.in_(response_ids)))
        session.execute(delete(m.RunRow).where(m.RunRow.id.in_(run_ids)))
        session.execute(delete(m.DatasetRow).where(m.DatasetRow.id == dataset_id))
        record(session, actor, "delete", "dataset", dataset_id, dataset_name,
               f"with {summary.responses} responses, {summary.runs} runs, {summary.grades} "
               f"grades, {summary.human_verdicts} human verdicts")
        return summary
