"""Human verdicts as CSV: an all-or-nothing import (the sheet out: verdict_sheet.py).

Columns: ``response_id`` (the response's id in the dataset, or ``#<number>`` for a response
without one), ``criterion`` (its name in the rubric version), ``verdict`` (MET, UNMET or
CANNOT_ASSESS, any case), ``reviewer`` and an optional ``note``; other columns are ignored.

Every reviewer has their own verdicts: the ``reviewer`` cell says whose verdict a row is, and
one sheet may hold several reviewers' verdicts on the same response and criterion. A reviewer
must be someone the workbench knows (storage/services/reviewer_names.py: compared normalised
and case-folded, so ``ANN`` is ``ann``); an unknown name is refused with its rows, and nothing
is written, unless the import is told to create new reviewers. A row whose verdict cell is
empty is left out (a sheet row nobody filled in); a row equal to that reviewer's current
verdict (same verdict and note) is left out too, so re-importing an edited sheet appends only
what changed.

Two passes, all or nothing. First the file is read as a stream and every row checked, with
no write lock; the checked rows go to a temporary file (storage/row_spill.py) and the
duplicate check keeps a compact index (storage/first_seen.py), so memory does not grow with
the file. Only a file without a single problem reaches the second pass: one transaction that
reads the spilled rows back a batch at a time, compares each batch with its reviewers'
current verdicts (the new rows, chained, are parked again), then appends them with one
INSERT per batch. The trade-off: on SQLite the write lock is taken by the first INSERT and
held until the commit, i.e. over all the inserts (not over parsing, checking or the reads);
writing each batch in its own transaction would free the lock between batches but could
leave half an import behind after a failure (full disk, a lost connection), which the
import never does. A reviewer's save landing between the reads and the inserts makes the
whole second pass run again (reviews.retry_until_saved).

The sheet's cells are spreadsheet-safe (storage/csv_cells.py: a text cell that would start a
formula gets a leading ``'``); the import removes exactly that prefix again, so an exported
sheet imports back to the same ids, names, reviewers and notes.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import select

from grading.types import Verdict
from storage import csv_cells, limits
from storage import models as m
from storage.choices import stored_choice
from storage.convert import criterion_info
from storage.engine import SessionFactory
from storage.errors import ImportProblemsError, InvalidInputError, Problem
from storage.first_seen import FirstSeen
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.response_files import RowReader
from storage.row_spill import RowSpill
from storage.services import effective_upkeep, people, reviewer_names, reviews
from storage.services.reviewers import Actor, Role, require
from storage.services.verdict_sheet import COLUMNS, export_verdict_sheet_csv
from storage.services.verdict_writes import Written, insert_rows, new_rows

__all__ = ["COLUMNS", "VerdictImportSummary", "export_verdict_sheet_csv",
           "import_human_verdicts"]

_CANDIDATES = {
    "response id": ("response_id", "external_id", "id", "response"),
    "criterion": ("criterion", "criterion_name", "name"),
    "verdict": ("verdict",),
    "reviewer": ("reviewer", "reviewer_name"),
}
_NOTE_CANDIDATES = ("note", "explanation", "comment")
# Verdicts per INSERT statement (one executemany each).
WRITE_BATCH = 5_000
# Rows named per unknown reviewer in the message.
_ROWS_SHOWN = 5


@dataclass(frozen=True)
class VerdictImportSummary:
    verdicts: int  # appended to the history
    responses: int
    reviewers: tuple[str, ...]  # whose verdicts were appended
    unchanged: int = 0  # equal to the current verdict, left out
    blank: int = 0  # no verdict given, left out
    # Verdicts appended per reviewer, most first.
    per_reviewer: tuple[tuple[str, int], ...] = ()
    created: tuple[str, ...] = ()  # reviewers this import created (create_reviewers)

    def reviewers_text(self, limit: int = 5) -> str:
        """``ana (120), bo (80) and 3 more reviewers``: at most ``limit`` named."""
        shown = ", ".join(f"{name} ({count})" for name, count in self.per_reviewer[:limit])
        more = len(self.per_reviewer) - limit
        return shown + (f" and {more} more reviewer{'s' if more != 1 else ''}"
                        if more > 0 else "")


class _Row(NamedTuple):
    """One valid sheet row, kept small: a 200,000-row sheet is held as these alone."""

    response_id: int
    criterion_id: int
    verdict: Verdict
    reviewer: str  # the known (or created) reviewer's key
    note: str
    option: str | None = None  # the chosen option's label on a multi-choice criterion


@dataclass
class _Unknown:
    name: str  # as first spelled in the sheet
    rows: list[str] = field(default_factory=list)
    count: int = 0
    ambiguous: tuple[str, ...] = ()


def _column(columns: Sequence[str], candidates: Sequence[str]) -> str | None:
    lowered = {c.lower().replace(" ", "_"): c for c in columns}
    return next((lowered[c] for c in candidates if c in lowered), None)


def import_human_verdicts(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    data: bytes | str | os.PathLike, filename: str | None = None, *, actor: Actor,
    create_reviewers: bool = False,
) -> VerdictImportSummary:
    """Append the verdicts of a CSV (its bytes, its text or its path) to each reviewer's
    history, all or nothing.

    On any problem ImportProblemsError lists every one with its row and column and nothing is
    written; a reviewer the workbench does not know is a problem unless ``create_reviewers``.
    Rows of reviewers other than ``actor`` need an admin.
    """
    require(actor, Role.REVIEWER, "import verdicts")
    with RowSpill(WRITE_BATCH) as spill:
        checker = _Checker(sessions, rubric_version_id, dataset_id, actor, filename, spill)
        reader = RowReader(data, filename, fmt="csv")
        if reader.empty:
            reader.close()
            raise ImportProblemsError([Problem("", "the file is empty")],
                                      source=reader.filename)
        try:
            for where, record in reader:
                checker.check(where, record, reader.columns)
        except OSError as exc:  # the temporary folder is full (the sheet itself is open)
            reader.close()
            raise ImportProblemsError([Problem("", (
                f"cannot park the checked rows in the temporary folder "
                f"{tempfile.gettempdir()}: {exc.strerror or exc}; free some space there "
                "(or set TMPDIR to a folder with room) and import again"))],
                source=reader.filename) from None
        if reader.problems:
            raise ImportProblemsError(reader.problems, source=reader.filename)
        if not reader.rows_read:
            raise ImportProblemsError([Problem("", "the file has no rows")],
                                      source=reader.filename)
        created = checker.finish(create_reviewers)
        if any(key != actor.key for key in checker.reviewers):
            require(actor, Role.ADMIN, "import verdicts for other reviewers")
        names = checker.names

        def work() -> Written:
            written = Written()
            with sessions.begin() as session, RowSpill(1) as ready:
                criteria = [c.id for c in rubric_repo.criteria_of(session, rubric_version_id)]
                # Reads first (a batch at a time, each batch's new rows parked again), then
                # the inserts: SQLite's write lock is taken by the first INSERT, so it is held
                # for the inserts alone, not for the reads between them.
                for batch in spill.batches():
                    values = new_rows(session, rubric_version_id, criteria, batch, names,
                                       written)
                    if values:
                        ready.append(values)
                now = m.utcnow()
                for [values] in ready.batches():
                    insert_rows(session, rubric_version_id, values, now)
                    # Batch by batch, so memory stays flat in the sheet's size.
                    effective_upkeep.refresh_verdicts(session, [(v[0], v[1]) for v in values])
                if written.verdicts:
                    rubric_repo.freeze(session, rubric_version_id)
                    dataset = session.get(m.DatasetRow, dataset_id)
                    who = sorted(written.per)
                    of = (", ".join(who) if len(who) <= 5
                          else f"{len(who)} reviewers ({', '.join(who[:5])}, …)")
                    people.record(session, actor, "import verdicts", "dataset", dataset_id,
                                  dataset.name if dataset else "",
                                  f"{written.verdicts} verdicts of {of}"
                                  + (f" from {filename}" if filename else ""))
            return written

        # A reviewer saving one of these verdicts at the same moment rolls the whole import
        # back; it runs again after theirs (bounded by time).
        written = reviews.retry_until_saved(work)
        checked = spill.count
    per = written.per
    return VerdictImportSummary(
        verdicts=written.verdicts, responses=len(written.responses),
        reviewers=tuple(sorted(per)), unchanged=checked - written.verdicts,
        blank=checker.blank, per_reviewer=tuple(sorted(per.items(), key=lambda p: (-p[1], p[0]))),
        created=tuple(sorted(k for k in created if k in per)),
    )


class _Checker:
    """Checks rows one at a time as the file streams by; keeps only compact valid rows."""

    def __init__(self, sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
                 actor: Actor, filename: str | None, spill: RowSpill):
        with sessions() as session:
            criteria = [criterion_info(c) for c in
                        rubric_repo.get_version(session, rubric_version_id).criteria]
            dataset_repo.get_dataset(session, dataset_id)
            self.ids: dict[str, int] = {}
            for rid, external in session.execute(
                select(m.ResponseRow.id, m.ResponseRow.external_id)
                .where(m.ResponseRow.dataset_id == dataset_id)
            ):
                self.ids[f"#{rid}"] = rid
                if external is not None:
                    self.ids[external] = rid  # an external id wins over a "#<number>" look-alike
            self.known = reviewer_names.known_reviewers(session, also=[actor.key])
        self.by_name = {c.label: c.id for c in criteria}
        self.by_id = {c.id: c for c in criteria}
        self.filename = filename
        self.problems: list[Problem] = []
        self.spill = spill
        self.reviewers: set[str] = set()  # keys of the reviewers with a checked row
        self.blank = 0
        self.first_seen = FirstSeen(list(self.ids.values()), [c.id for c in criteria])
        self.matched: dict[str, str | None] = {}  # sheet spelling -> key (None: unknown)
        self.unknown: dict[str, _Unknown] = {}  # normalised name -> where it appears
        self.names = dict(self.known.names)
        self.columns: dict[str, str] | None = None
        self.note_column: str | None = None

    def _header(self, columns: Sequence[str]) -> dict[str, str]:
        found = {name: _column(columns, c) for name, c in _CANDIDATES.items()}
        missing = [name for name, column in found.items() if column is None]
        if missing:
            raise ImportProblemsError([
                Problem("header", f"no {name!r} column (expected one of "
                                  f"{', '.join(_CANDIDATES[name])}); the file has: "
                                  f"{', '.join(columns)}")
                for name in missing], source=self.filename)
        self.note_column = _column(columns, _NOTE_CANDIDATES)
        return {k: v for k, v in found.items() if v is not None}

    def _reviewer(self, raw: str, where: str) -> str:
        """The key of the reviewer a sheet name means; an unknown one is noted (and named
        by its cleaned spelling, should the import create it)."""
        if raw not in self.matched:
            found = reviewer_names.match(self.known, raw)
            self.matched[raw] = found.key
            if found.key is None:
                normal = reviewer_names.normalise(raw)
                entry = self.unknown.setdefault(
                    normal, _Unknown(reviewer_names.clean(raw), ambiguous=found.ambiguous))
                self.names.setdefault(reviewer_names.new_key(entry.name), entry.name)
        key = self.matched[raw]
        if key is not None:
            return key
        entry = self.unknown[reviewer_names.normalise(raw)]
        entry.count += 1
        if len(entry.rows) < _ROWS_SHOWN:
            entry.rows.append(where)
        return reviewer_names.new_key(entry.name)

    def check(self, where: str, raw_record: dict[str, Any], columns: Sequence[str]) -> None:
        if self.columns is None:
            self.columns = self._header(list(columns))
        cols = self.columns
        wanted = (*cols.values(), self.note_column)
        record = {key: csv_cells.restore(value) if isinstance(value, str) else value
                  for key, value in raw_record.items() if key in wanted}
        response_col, criterion_col = cols["response id"], cols["criterion"]
        verdict_col, reviewer_col = cols["verdict"], cols["reviewer"]
        found: list[Problem] = []
        external = str(record.get(response_col) or "").strip()
        response_id = self.ids.get(external)
        if not external:
            found.append(Problem(f"{where}, column {response_col!r}", "the response id is empty"))
        elif response_id is None:
            found.append(Problem(f"{where}, column {response_col!r}",
                                 f"no response with id {external!r} in this dataset"))
        name = str(record.get(criterion_col) or "").strip()
        criterion_id = self.by_name.get(name)
        if criterion_id is None:
            found.append(Problem(
                f"{where}, column {criterion_col!r}",
                f"no criterion named {name!r} in this rubric version (it has: "
                f"{', '.join(self.by_name)})" if name else "the criterion name is empty"))
        raw_verdict = str(record.get(verdict_col) or "").strip()
        if not raw_verdict:
            self.problems.extend(found)
            self.blank += 1
            return
        verdict = option = None
        try:
            if criterion_id is None:
                verdict = Verdict.parse(raw_verdict)
            else:  # an option label on a multi-choice criterion (storage.choices)
                verdict, option = stored_choice(self.by_id[criterion_id], raw_verdict)
        except (ValueError, InvalidInputError) as exc:
            found.append(Problem(f"{where}, column {verdict_col!r}", str(exc)))
        raw_reviewer = str(record.get(reviewer_col) or "").strip()
        reviewer = ""
        if raw_reviewer not in self.matched and not reviewer_names.clean(raw_reviewer):
            found.append(Problem(f"{where}, column {reviewer_col!r}",
                                 "the reviewer is empty; every verdict needs a reviewer name"))
        note = str(record.get(self.note_column) or "").strip() if self.note_column else ""
        for column, text, max_chars in ((reviewer_col, raw_reviewer, limits.NAME_MAX),
                                        (self.note_column, note, None)):
            problem = limits.text_problem(text, max_chars=max_chars)
            if problem:
                found.append(Problem(f"{where}, column {column!r}", f"the value {problem}"))
        if not found and raw_reviewer:
            reviewer = self._reviewer(raw_reviewer, where)
        if response_id is not None and criterion_id is not None and reviewer:
            first = self.first_seen.first(response_id, criterion_id, reviewer, where)
            if first is not None:
                found.append(Problem(where, f"response {external!r}, criterion {name!r} is "
                                            f"already set for reviewer {reviewer!r} by "
                                            f"{first}; keep one row"))
        self.problems.extend(found)
        if not found and verdict is not None and response_id is not None \
                and criterion_id is not None and reviewer and not self.problems:
            # Once a problem is found nothing will be written: stop spilling rows.
            self.reviewers.add(reviewer)
            self.spill.append(_Row(response_id, criterion_id, verdict, reviewer, note, option))

    def finish(self, create_reviewers: bool) -> set[str]:
        """The keys of reviewers to create; every problem raised."""
        problems = list(self.problems)
        column = (self.columns or {}).get("reviewer", "reviewer")
        for entry in self.unknown.values():
            if create_reviewers and not entry.ambiguous:
                continue
            rows = ", ".join(entry.rows) + (f" and {entry.count - len(entry.rows)} more rows"
                                            if entry.count > len(entry.rows) else "")
            if entry.ambiguous:
                message = (f"{entry.name!r} could be any of the known reviewers "
                           f"{', '.join(map(repr, entry.ambiguous))}; write one of them "
                           "exactly as shown")
            else:
                message = (f"{entry.name!r} is not a known reviewer (known: "
                           f"{self._known_text()}); correct the name, or import with "
                           "“create new reviewers” (--create-reviewers) to add them")
            problems.append(Problem(f"column {column!r}, {rows}", message))
        if problems:
            raise ImportProblemsError(problems, source=self.filename)
        return {reviewer_names.new_key(e.name) for e in self.unknown.values()}

    def _known_text(self, limit: int = 8) -> str:
        keys = sorted(self.known.names)
        if not keys:
            return "nobody yet"
        return ", ".join(keys[:limit]) + (f" and {len(keys) - limit} more"
                                          if len(keys) > limit else "")
