"""Reading responses from CSV, JSONL and JSON files; every problem located by row or line.

Used by the CLI and the UI alike. Nothing here touches the database: the result goes to
``storage.services.datasets.import_responses``, which writes everything or nothing.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from storage.errors import ImportProblemsError, Problem

FileFormat = Literal["csv", "jsonl", "json"]
TEXT_COLUMNS = ("text", "output", "response", "completion", "answer")
QUERY_COLUMNS = ("query", "prompt", "question", "input")
ID_COLUMNS = ("id", "external_id", "response_id", "uid")
THINKING_COLUMNS = ("thinking", "reasoning")


@dataclass(frozen=True)
class ColumnMapping:
    """Which column holds what; other columns go into the response's metadata."""

    text: str = "text"
    query: str | None = None
    id: str | None = None
    thinking: str | None = None

    @classmethod
    def guess(cls, columns: Sequence[str]) -> ColumnMapping:
        """Sensible defaults from the column names (case-insensitive)."""
        lowered = {c.lower(): c for c in columns}

        def pick(candidates: tuple[str, ...]) -> str | None:
            return next((lowered[c] for c in candidates if c in lowered), None)

        return cls(
            text=pick(TEXT_COLUMNS) or "text", query=pick(QUERY_COLUMNS),
            id=pick(ID_COLUMNS), thinking=pick(THINKING_COLUMNS),
        )

    def mapped(self) -> set[str]:
        return {c for c in (self.text, self.query, self.id, self.thinking) if c}


@dataclass(frozen=True)
class NewResponse:
    """A validated response ready to be stored."""

    output: str
    query: str | None = None
    thinking: str | None = None
    external_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    location: str = ""


@dataclass(frozen=True)
class ParsedFile:
    format: FileFormat
    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    locations: tuple[str, ...]


def detect_format(filename: str | None, text: str) -> FileFormat:
    name = (filename or "").lower()
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith(".json"):
        return "json"
    stripped = text.lstrip()
    if stripped.startswith("["):
        return "json"
    if stripped.startswith("{"):
        try:
            whole = json.loads(stripped)
        except ValueError:
            return "jsonl"  # several objects, one per line
        return "json" if isinstance(whole, dict) and "responses" in whole else "jsonl"
    return "csv"


def decode(data: bytes) -> str:
    """UTF-8 (with or without BOM) or UTF-16 with BOM; anything else is explained."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportProblemsError([Problem(
            f"line {line}, byte {exc.start}",
            "the file is not UTF-8 text (it may be Latin-1 or Windows-1252, as Excel saves "
            "CSV); save it as 'CSV UTF-8' or UTF-8 text and upload it again",
        )]) from None


def parse_file(data: bytes | str, filename: str | None = None, *,
               fmt: FileFormat | None = None) -> ParsedFile:
    """Read rows (dicts) from a file; raise ImportProblemsError with every syntax problem."""
    text = decode(data) if isinstance(data, bytes) else data
    fmt = fmt or detect_format(filename, text)
    if not text.strip():
        raise ImportProblemsError([Problem("", "the file is empty")], source=filename)
    reader = {"csv": _read_csv, "jsonl": _read_jsonl, "json": _read_json}[fmt]
    rows, locations, columns, problems = reader(text)
    if problems:
        raise ImportProblemsError(problems, source=filename)
    if not rows:
        raise ImportProblemsError([Problem("", "the file has no rows")], source=filename)
    return ParsedFile(fmt, tuple(columns), tuple(rows), tuple(locations))


def _read_csv(text: str):
    csv.field_size_limit(1 << 30)  # megabyte-sized responses are normal
    reader = csv.reader(io.StringIO(text, newline=""))
    rows, locations, problems = [], [], []
    try:
        header = next(reader)
    except (csv.Error, StopIteration) as exc:
        return [], [], [], [Problem("line 1", f"cannot read the CSV header: {exc}")]
    columns = [h.strip() for h in header]
    seen: set[str] = set()
    for index, name in enumerate(columns, start=1):
        if not name:
            problems.append(Problem("line 1", f"column {index} has no name"))
        elif name in seen:
            problems.append(Problem("line 1", f"column {name!r} appears twice"))
        seen.add(name)
    number = 0
    while True:
        start_line = reader.line_num + 1
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append(Problem(f"line {start_line}", f"not valid CSV: {exc}"))
            break
        if not any(v.strip() for v in values):
            continue
        number += 1
        where = f"row {number} (line {start_line})"
        if len(values) != len(columns):
            problems.append(Problem(
                where, f"{len(values)} values but the header has {len(columns)} columns"
            ))
            continue
        rows.append(dict(zip(columns, values, strict=True)))
        locations.append(where)
    return rows, locations, columns, problems


def _read_jsonl(text: str):
    rows, locations, problems = [], [], []
    columns: dict[str, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"line {number}, column {exc.colno}",
                                    f"not valid JSON: {exc.msg}"))
            continue
        if not isinstance(value, dict):
            problems.append(Problem(f"line {number}", "each line must be a JSON object"))
            continue
        columns.update(dict.fromkeys(value))
        rows.append(value)
        locations.append(f"line {number}")
    return rows, locations, list(columns), problems


def _read_json(text: str):
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [], [], [Problem(f"line {exc.lineno}, column {exc.colno}",
                                    f"not valid JSON: {exc.msg}")]
    if isinstance(data, dict) and isinstance(data.get("responses"), list):
        data = data["responses"]
    if not isinstance(data, list):
        return [], [], [], [Problem("", "expected a JSON list of objects "
                                        "(or {\"responses\": [...]})")]
    rows, locations, problems = [], [], []
    columns: dict[str, None] = {}
    for number, value in enumerate(data, start=1):
        if not isinstance(value, dict):
            problems.append(Problem(f"item {number}", "must be a JSON object"))
            continue
        columns.update(dict.fromkeys(value))
        rows.append(value)
        locations.append(f"item {number}")
    return rows, locations, list(columns), problems


def _text(value: Any, *, field_name: str) -> tuple[str | None, str | None]:
    """(text or None, problem or None); numbers become text, blanks become None."""
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None, f"{field_name} must be text, got {type(value).__name__}"
    text = str(value)
    return (text if text.strip() else None), None


def to_responses(
    rows: Sequence[Mapping[str, Any]],
    mapping: ColumnMapping | None = None,
    *,
    locations: Sequence[str] | None = None,
) -> tuple[list[NewResponse], list[Problem]]:
    """Validate rows (dicts) into responses; return every problem with its location."""
    if mapping is None:
        columns: dict[str, None] = {}
        for row in rows:
            if isinstance(row, Mapping):
                columns.update(dict.fromkeys(row))
        mapping = ColumnMapping.guess(list(columns))
    responses: list[NewResponse] = []
    problems: list[Problem] = []
    first_seen: dict[str, str] = {}
    for index, row in enumerate(rows):
        where = locations[index] if locations else f"row {index + 1}"
        if not isinstance(row, Mapping):
            problems.append(Problem(where, "must be a mapping of column names to values"))
            continue
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
        values: dict[str, str | None] = {}
        for key, column in (("query", mapping.query), ("thinking", mapping.thinking),
                            ("id", mapping.id)):
            values[key] = None
            if column is None or column not in row:
                continue
            values[key], problem = _text(row[column], field_name=f"{column!r}")
            if problem:
                row_problems.append(problem)
        external_id = values["id"].strip() if values["id"] else None
        if external_id is not None:
            if len(external_id) > 500:
                row_problems.append("the id is longer than 500 characters")
            elif external_id in first_seen:
                row_problems.append(
                    f"id {external_id!r} is already used by {first_seen[external_id]}"
                )
            else:
                first_seen[external_id] = where
        metadata = {k: v for k, v in row.items() if k not in mapping.mapped()}
        if isinstance(metadata.get("metadata"), dict):
            metadata = {**metadata.pop("metadata"), **metadata}
        try:
            json.dumps(metadata)
        except (TypeError, ValueError) as exc:
            row_problems.append(f"metadata is not JSON-serialisable: {exc}")
        problems.extend(Problem(where, p) for p in row_problems)
        if not row_problems and output is not None:
            responses.append(NewResponse(
                output=output, query=values["query"], thinking=values["thinking"],
                external_id=external_id, metadata=metadata, location=where,
            ))
    return responses, problems


def read_responses(
    data: bytes | str, filename: str | None = None, *,
    mapping: ColumnMapping | None = None, fmt: FileFormat | None = None,
) -> list[NewResponse]:
    """Parse and validate a file in one go; raise ImportProblemsError listing every problem."""
    parsed = parse_file(data, filename, fmt=fmt)
    mapping = mapping or ColumnMapping.guess(parsed.columns)
    missing = [c for c in mapping.mapped() if c not in parsed.columns]
    if missing:
        raise ImportProblemsError(
            [Problem("header", f"column {c!r} not found; the file has: "
                               f"{', '.join(parsed.columns)}") for c in sorted(missing)],
            source=filename,
        )
    responses, problems = to_responses(parsed.rows, mapping, locations=parsed.locations)
    if problems:
        raise ImportProblemsError(problems, source=filename)
    return responses
