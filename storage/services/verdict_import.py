"""Human verdicts as CSV: a sheet out (to fill in a spreadsheet) and an all-or-nothing import.

Columns: ``response_id`` (the response's id in the dataset, or ``#<number>`` for a response
without one), ``criterion`` (its name in the rubric version), ``verdict`` (MET, UNMET or
CANNOT_ASSESS, any case), ``reviewer`` and an optional ``note``; other columns are ignored.

Every reviewer has their own verdicts: the ``reviewer`` cell says whose verdict a row is (the
reviewer's identity, as the sheet shows it), and one sheet may hold several reviewers' verdicts
on the same response and criterion. A row whose verdict cell is empty is left out (a sheet row
nobody filled in); a row equal to that reviewer's current verdict (same verdict and note) is
left out too, so re-importing an edited sheet appends only what changed.

The sheet's cells are spreadsheet-safe (storage/csv_cells.py: a text cell that would start a
formula gets a leading ``'``); the import removes exactly that prefix again, so an exported
sheet imports back to the same ids, names, reviewers and notes.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from grading.types import Verdict
from storage import csv_cells, limits
from storage import models as m
from storage.convert import criterion_info
from storage.engine import SessionFactory
from storage.errors import ImportProblemsError, Problem
from storage.export_names import response_key
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.response_files import parse_file
from storage.services import people, reviews
from storage.services.agreement_sources import reviewer_verdicts
from storage.services.blindness import EVERYTHING, Sight, may_see
from storage.services.reviewers import Actor, Role, require

COLUMNS = ("response_id", "criterion", "verdict", "reviewer", "note")
_CANDIDATES = {
    "response id": ("response_id", "external_id", "id", "response"),
    "criterion": ("criterion", "criterion_name", "name"),
    "verdict": ("verdict",),
    "reviewer": ("reviewer", "reviewer_name"),
}
_NOTE_CANDIDATES = ("note", "explanation", "comment")


@dataclass(frozen=True)
class VerdictImportSummary:
    verdicts: int  # appended to the history
    responses: int
    reviewers: tuple[str, ...]
    unchanged: int = 0  # equal to the current verdict, left out
    blank: int = 0  # no verdict given, left out


@dataclass(frozen=True)
class _Row:
    location: str
    response_id: int
    criterion_id: int
    verdict: Verdict
    reviewer: str
    note: str


def export_verdict_sheet_csv(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int, *,
    sight: Sight = EVERYTHING,
) -> str:
    """One row per response x criterion x reviewer with that reviewer's current verdict (one
    blank row where nobody answered), in the import's columns plus the requirement text,
    ready to fill in and import. A blind viewer (storage/services/blindness.py) gets a blank
    row where they have not answered, whoever else did."""
    with sessions() as session:
        criteria = [criterion_info(c) for c in
                    rubric_repo.get_version(session, rubric_version_id).criteria]
        dataset_repo.get_dataset(session, dataset_id)
        responses = session.execute(
            select(m.ResponseRow.id, m.ResponseRow.external_id)
            .where(m.ResponseRow.dataset_id == dataset_id).order_by(m.ResponseRow.id)).all()
        current: dict[tuple[int, int], list] = {}
        for h in reviewer_verdicts(session, rubric_version_id, dataset_id):
            current.setdefault((h.response_id, h.criterion_id), []).append(h)
    current = {key: found for key, found in current.items() if may_see(sight, found)}
    out = io.StringIO()
    writer = csv_cells.writer(out, lineterminator="\n")
    writer.writerow([*COLUMNS, "requirement"])
    for rid, external in responses:
        for criterion in criteria:
            for human in current.get((rid, criterion.id)) or [None]:
                writer.writerow([
                    response_key(rid, external), criterion.label,
                    human.verdict.value if human else "", human.reviewer_key if human else "",
                    human.note if human else "", criterion.requirement,
                ])
    return out.getvalue()


def _column(columns: Sequence[str], candidates: Sequence[str]) -> str | None:
    lowered = {c.lower().replace(" ", "_"): c for c in columns}
    return next((lowered[c] for c in candidates if c in lowered), None)


def import_human_verdicts(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int, data: bytes | str,
    filename: str | None = None, *, actor: Actor,
) -> VerdictImportSummary:
    """Append the verdicts of a CSV to each reviewer's history, all or nothing.

    On any problem ImportProblemsError lists every one with its row and column and nothing is
    written. Verdicts go through the Review page's append path, in one transaction. Rows of
    reviewers other than ``actor`` need an admin.
    """
    require(actor, Role.REVIEWER, "import verdicts")
    parsed = parse_file(data, filename, fmt="csv")
    records = [{key: csv_cells.restore(value) if isinstance(value, str) else value
                for key, value in record.items()} for record in parsed.rows]
    columns = {name: _column(parsed.columns, c) for name, c in _CANDIDATES.items()}
    missing = [name for name, column in columns.items() if column is None]
    if missing:
        raise ImportProblemsError([
            Problem("header", f"no {name!r} column (expected one of "
                              f"{', '.join(_CANDIDATES[name])}); the file has: "
                              f"{', '.join(parsed.columns)}")
            for name in missing], source=filename)
    note_column = _column(parsed.columns, _NOTE_CANDIDATES)
    rows, blank = _validate(sessions, rubric_version_id, dataset_id, records,
                            parsed.locations, columns, note_column, filename)
    if any(r.reviewer != actor.key for r in rows):
        require(actor, Role.ADMIN, "import verdicts for other reviewers")

    def work() -> list[_Row]:
        with sessions.begin() as session:
            current = {(h.response_id, h.criterion_id, h.reviewer_key): h for h in
                       reviewer_verdicts(session, rubric_version_id, dataset_id)}
            changed = [r for r in rows if not _same(current.get(
                (r.response_id, r.criterion_id, r.reviewer)), r)]
            for row in changed:
                # The Review page's append path: freezes the version, chains the history.
                reviews.append_verdict(session, row.response_id, row.criterion_id,
                                       row.verdict, (row.reviewer, row.reviewer), row.note,
                                       reviews.UNCHECKED)
            if changed:
                dataset = session.get(m.DatasetRow, dataset_id)
                reviewers = sorted({r.reviewer for r in changed})
                people.record(session, actor, "import verdicts", "dataset", dataset_id,
                              dataset.name if dataset else "",
                              f"{len(changed)} verdicts of {', '.join(reviewers)}"
                              + (f" from {filename}" if filename else ""))
        return changed

    # A reviewer saving one of these verdicts at the same moment rolls the whole import
    # back; it runs again after theirs (bounded by time).
    changed = reviews.retry_until_saved(work)
    return VerdictImportSummary(
        verdicts=len(changed), responses=len({r.response_id for r in changed}),
        reviewers=tuple(sorted({r.reviewer for r in changed})),
        unchanged=len(rows) - len(changed), blank=blank,
    )


def _same(current: Any, row: _Row) -> bool:
    return current is not None and (current.verdict, current.note) == (row.verdict, row.note)


def _validate(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    records: Sequence[dict[str, Any]], locations: Sequence[str], columns: dict[str, str | None],
    note_column: str | None, filename: str | None,
) -> tuple[list[_Row], int]:
    with sessions() as session:
        criteria = [criterion_info(c) for c in
                    rubric_repo.get_version(session, rubric_version_id).criteria]
        dataset_repo.get_dataset(session, dataset_id)
        ids: dict[str, int] = {}
        for rid, external in session.execute(
            select(m.ResponseRow.id, m.ResponseRow.external_id)
            .where(m.ResponseRow.dataset_id == dataset_id)
        ):
            ids[f"#{rid}"] = rid
            if external is not None:
                ids[external] = rid  # an external id wins over a "#<number>" look-alike
    by_name = {c.label: c.id for c in criteria}
    problems: list[Problem] = []
    rows: list[_Row] = []
    blank = 0
    first_seen: dict[tuple[int, int, str], str] = {}
    response_col, criterion_col = columns["response id"], columns["criterion"]
    verdict_col, reviewer_col = columns["verdict"], columns["reviewer"]
    for record, where in zip(records, locations, strict=True):
        found: list[Problem] = []
        external = str(record.get(response_col) or "").strip()
        response_id = ids.get(external)
        if not external:
            found.append(Problem(f"{where}, column {response_col!r}", "the response id is empty"))
        elif response_id is None:
            found.append(Problem(f"{where}, column {response_col!r}",
                                 f"no response with id {external!r} in this dataset"))
        name = str(record.get(criterion_col) or "").strip()
        criterion_id = by_name.get(name)
        if criterion_id is None:
            found.append(Problem(
                f"{where}, column {criterion_col!r}",
                f"no criterion named {name!r} in this rubric version (it has: "
                f"{', '.join(by_name)})" if name else "the criterion name is empty"))
        raw_verdict = str(record.get(verdict_col) or "").strip()
        if not raw_verdict:
            problems.extend(found)
            blank += 1
            continue
        verdict = None
        try:
            verdict = Verdict.parse(raw_verdict)
        except ValueError as exc:
            found.append(Problem(f"{where}, column {verdict_col!r}", str(exc)))
        reviewer = str(record.get(reviewer_col) or "").strip()
        if not reviewer:
            found.append(Problem(f"{where}, column {reviewer_col!r}",
                                 "the reviewer is empty; every verdict needs a reviewer name"))
        note = str(record.get(note_column) or "").strip() if note_column else ""
        for column, text, max_chars in ((reviewer_col, reviewer, limits.NAME_MAX),
                                        (note_column, note, None)):
            problem = limits.text_problem(text, max_chars=max_chars)
            if problem:
                found.append(Problem(f"{where}, column {column!r}", f"the value {problem}"))
        if response_id is not None and criterion_id is not None and reviewer:
            key = (response_id, criterion_id, reviewer)
            if key in first_seen:
                found.append(Problem(where, f"response {external!r}, criterion {name!r} is "
                                            f"already set for reviewer {reviewer!r} by "
                                            f"{first_seen[key]}; keep one row"))
            first_seen.setdefault(key, where)
        problems.extend(found)
        if not found and verdict is not None and response_id is not None \
                and criterion_id is not None:
            rows.append(_Row(where, response_id, criterion_id, verdict, reviewer, note))
    if problems:
        raise ImportProblemsError(problems, source=filename)
    return rows, blank
