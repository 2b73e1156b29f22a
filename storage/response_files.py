"""Reading responses from CSV, JSONL and JSON files; every problem located by row or line
(the rows themselves are read by storage/row_reader.py).

Used by the CLI and the UI alike. Nothing here touches the database: the result goes to
``storage.services.datasets``, which writes everything or nothing.

Files are read as a stream (``iter_responses``): CSV and JSONL a row at a time, so memory
does not grow with the number of rows (a JSON list is read whole). CSV is parsed strictly:
a quote that is never closed is an error naming the line where the quoted field starts,
never a field that swallows the following rows. The separator (comma, semicolon, tab or
``|``) is detected from the header and the first rows. JSON values may not be NaN or
Infinity (not JSON; refused with their line) nor nest more than ``MAX_NESTING`` levels.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from storage import limits
from storage.column_guess import guess_columns
from storage.errors import ImportProblemsError, Problem
from storage.row_reader import (
    DELIMITERS,
    PEEK_ROWS,
    FileFormat,
    RowReader,
    Source,
    decode,
    describe_format,
    detect_format,
)

# Read from here by the CLI, the app and the tests as before the row reader had its module.
__all__ = ["DELIMITERS", "ColumnMapping", "FileFormat", "NewResponse", "ParsedFile",
           "ResponseValidator", "RowReader", "Source", "count_responses", "decode", "detect_format",
           "iter_responses", "parse_file", "peek_columns", "read_responses", "to_responses"]


@dataclass(frozen=True)
class ColumnMapping:
    """Which column holds what; other columns go into the response's metadata."""

    text: str = "text"
    query: str | None = None
    id: str | None = None
    thinking: str | None = None
    reference: str | None = None  # the reference answer shown to the judge

    @classmethod
    def guess(cls, columns: Sequence[str], rows: Sequence[Any] = ()) -> ColumnMapping:
        """Sensible defaults from the column names and the first ``rows`` (dicts):
        storage.column_guess."""
        found = guess_columns(columns, rows)
        return cls(text=found.text or "text", query=found.query, id=found.id,
                   thinking=found.thinking, reference=found.reference)

    def mapped(self) -> set[str]:
        return {c for c in (self.text, self.query, self.id, self.thinking, self.reference)
                if c}


@dataclass(frozen=True)
class NewResponse:
    """A validated response ready to be stored."""

    output: str
    query: str | None = None
    thinking: str | None = None
    external_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    location: str = ""
    reference: str | None = None


@dataclass(frozen=True)
class ParsedFile:
    format: FileFormat
    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    locations: tuple[str, ...]
    delimiter: str = ","

    @property
    def description(self) -> str:
        """``CSV``, ``CSV (semicolon-separated)``, ``JSONL`` ..."""
        return describe_format(self.format, self.delimiter)


def parse_file(data: Source, filename: str | None = None, *,
               fmt: FileFormat | None = None) -> ParsedFile:
    """Read rows (dicts) from a file; raise ImportProblemsError with every syntax problem."""
    reader = RowReader(data, filename, fmt=fmt)
    if reader.empty:
        reader.close()
        raise ImportProblemsError([Problem("", "the file is empty")], source=reader.filename)
    pairs = list(reader)
    if reader.problems:
        raise ImportProblemsError(reader.problems, source=reader.filename)
    if not pairs:
        raise ImportProblemsError([Problem("", "the file has no rows")], source=reader.filename)
    return ParsedFile(reader.format, tuple(reader.columns), tuple(r for _, r in pairs),
                      tuple(w for w, _ in pairs), reader.delimiter)


def _text(value: Any, *, field_name: str) -> tuple[str | None, str | None]:
    """(text or None, problem or None); numbers become text, blanks become None."""
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None, f"{field_name} must be text, got {type(value).__name__}"
    if isinstance(value, float) and not math.isfinite(value):
        return None, f"{field_name} is {value!r}, not text or a number"
    text = str(value)
    return (text if text.strip() else None), None


class ResponseValidator:
    """Checks rows one at a time; remembers ids to find duplicates within the file (unless
    ``remember_ids`` is False: the database finds them, and memory stays flat)."""

    def __init__(self, mapping: ColumnMapping, *, remember_ids: bool = True):
        self.mapping = mapping
        self._mapped = mapping.mapped()
        self._first_seen: dict[str, str] = {}
        self._remember = remember_ids

    def check(self, row: Any, where: str) -> tuple[NewResponse | None, list[Problem]]:
        mapping = self.mapping
        if not isinstance(row, Mapping):
            return None, [Problem(where, "must be a mapping of column names to values")]
        row_problems: list[str] = []
        if mapping.text not in row:
            row_problems.append(f"the text column {mapping.text!r} is missing")
            output = None
        else:
            output, problem = _text(row[mapping.text], field_name=f"{mapping.text!r}")
            if problem:
                row_problems.append(problem)
            elif output is None:
                row_problems.append(f"the text column {mapping.text!r} is empty")
        values: dict[str, str | None] = {"text": output}
        for key, column in (("query", mapping.query), ("thinking", mapping.thinking),
                            ("id", mapping.id), ("reference", mapping.reference)):
            values[key] = None
            if column is None or column not in row:
                continue
            values[key], problem = _text(row[column], field_name=f"{column!r}")
            if problem:
                row_problems.append(problem)
        for key, column in (("text", mapping.text), ("query", mapping.query),
                            ("thinking", mapping.thinking), ("reference", mapping.reference)):
            problem = limits.text_problem(values[key])
            if problem:
                row_problems.append(f"the {column!r} text {problem}")
        external_id = values["id"].strip() if values["id"] else None
        if external_id is not None:
            problem = limits.text_problem(external_id, max_chars=limits.EXTERNAL_ID_MAX)
            if problem:
                row_problems.append(f"the id {problem}")
            elif external_id in self._first_seen:
                row_problems.append(
                    f"id {external_id!r} is already used by {self._first_seen[external_id]}")
            elif self._remember:
                self._first_seen[external_id] = where
        metadata = {k: v for k, v in row.items() if k not in self._mapped}
        if isinstance(metadata.get("metadata"), dict):
            metadata = {**metadata.pop("metadata"), **metadata}
        problem = limits.value_problem(metadata)
        if problem:
            row_problems.append(f"metadata {problem}")
        if row_problems or output is None:
            return None, [Problem(where, p) for p in row_problems]
        return NewResponse(output=output, query=values["query"], thinking=values["thinking"],
                           external_id=external_id, metadata=metadata, location=where,
                           reference=values["reference"]), []


def _guess_mapping(rows: Sequence[Any]) -> ColumnMapping:
    columns: dict[str, None] = {}
    for row in rows:
        if isinstance(row, Mapping):
            columns.update(dict.fromkeys(row))
    return ColumnMapping.guess(list(columns), rows)


def to_responses(
    rows: Sequence[Mapping[str, Any]],
    mapping: ColumnMapping | None = None,
    *,
    locations: Sequence[str] | None = None,
) -> tuple[list[NewResponse], list[Problem]]:
    """Validate rows (dicts) into responses; return every problem with its location."""
    validator = ResponseValidator(mapping or _guess_mapping(rows))
    responses: list[NewResponse] = []
    problems: list[Problem] = []
    for index, row in enumerate(rows):
        response, found = validator.check(row, locations[index] if locations
                                          else f"row {index + 1}")
        problems.extend(found)
        if response is not None:
            responses.append(response)
    return responses, problems


def peek_columns(source: Source, filename: str | None = None, *,
                 fmt: FileFormat | None = None) -> list[str]:
    """The columns of a file (CSV: its header; JSON: the keys of its first rows)."""
    reader = RowReader(source, filename, fmt=fmt)
    rows = iter(reader)
    try:
        for _ in itertools.islice(rows, PEEK_ROWS):
            pass
    finally:
        rows.close()  # type: ignore[attr-defined]
    return list(reader.columns)


def _missing_columns(mapping: ColumnMapping, reader: RowReader) -> list[Problem]:
    columns = list(reader.columns)
    return [Problem("header", f"column {c!r} not found; the file has: {', '.join(columns)}"
                    + _separator_hint(columns))
            for c in sorted(mapping.mapped()) if c not in reader.columns]


def _separator_hint(columns: Sequence[str]) -> str:
    if len(columns) == 1 and any(d in columns[0] for d in DELIMITERS if d != ","):
        return (" (one column only: the separator could not be told from the header; save "
                "the file as comma-separated CSV, in Excel: CSV UTF-8, comma delimited)")
    return ""


def iter_responses(
    source: Source, filename: str | None = None, *,
    mapping: ColumnMapping | None = None, fmt: FileFormat | None = None,
    reader: RowReader | None = None, remember_ids: bool = True,
) -> Iterator[NewResponse]:
    """Validated responses of a file, one at a time (memory does not grow with the rows,
    but for the ids remembered to find duplicates: none with ``remember_ids=False``, when
    the rows go to a database that refuses a duplicate id itself).

    Raises ImportProblemsError, listing every problem with its location, once the file has
    been read to the end: a caller that stores rows as they come does so in a transaction
    that this exception rolls back.
    """
    reader = reader or RowReader(source, filename, fmt=fmt)
    name = reader.filename
    if reader.empty:
        reader.close()
        raise ImportProblemsError([Problem("", "the file is empty")], source=name)
    rows = iter(reader)
    peeked = list(itertools.islice(rows, PEEK_ROWS))
    if not peeked:
        raise ImportProblemsError(reader.problems or [Problem("", "the file has no rows")],
                                  source=name)
    mapping = mapping or ColumnMapping.guess(list(reader.columns), [row for _w, row in peeked])
    missing = _missing_columns(mapping, reader) if reader.format == "csv" else []
    if missing:
        raise ImportProblemsError(missing, source=name)
    validator = ResponseValidator(mapping, remember_ids=remember_ids)
    problems: list[Problem] = []
    for where, row in itertools.chain(peeked, rows):
        response, found = validator.check(row, where)
        if found:
            problems.extend(found)
        elif response is not None and not problems and not reader.problems:
            yield response
    if reader.problems:
        raise ImportProblemsError(reader.problems, source=name)
    missing = _missing_columns(mapping, reader)
    if missing:
        raise ImportProblemsError(missing, source=name)
    if problems:
        raise ImportProblemsError(problems, source=name)


def read_responses(
    data: Source, filename: str | None = None, *,
    mapping: ColumnMapping | None = None, fmt: FileFormat | None = None,
) -> list[NewResponse]:
    """Parse and validate a file in one go; raise ImportProblemsError listing every problem."""
    return list(iter_responses(data, filename, mapping=mapping, fmt=fmt))


def count_responses(source: Source, filename: str | None = None, *,
                    mapping: ColumnMapping | None = None, remember_ids: bool = True) -> int:
    """Validate a whole file without keeping its rows; the number of responses in it
    (``remember_ids=False``: duplicate ids are left to the database, see iter_responses)."""
    return sum(1 for _ in iter_responses(source, filename, mapping=mapping,
                                         remember_ids=remember_ids))
