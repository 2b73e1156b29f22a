"""Reading the rows of a responses file — CSV (strict quoting, the separator detected),
JSONL or a JSON list — as a stream, each row with the line it came from; decoding (UTF-8 or
UTF-16 with BOM) and JSON's NaN / Infinity refused with their line. storage/response_files.py
turns the rows into responses."""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Literal

from grading.nesting import MAX_NESTING, deep_line, depth, too_deep_message
from storage.errors import ImportProblemsError, Problem

FileFormat = Literal["csv", "jsonl", "json"]
Source = bytes | str | os.PathLike
DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
_HEAD_CHARS = 64 * 1024
PEEK_ROWS = 1000


def describe_format(fmt: FileFormat, delimiter: str = ",") -> str:
    """``CSV``, ``CSV (semicolon-separated)``, ``JSONL`` ..."""
    if fmt == "csv" and delimiter != ",":
        return f"CSV ({DELIMITERS[delimiter]}-separated)"
    return fmt.upper()


def detect_format(filename: str | None, text: str) -> FileFormat:
    """From the file name, else from the start of the text."""
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
        first = stripped.split("\n", 1)[0]
        try:
            value = json.loads(first)
        except (ValueError, RecursionError):
            return "json"  # an object over several lines: one JSON document
        return "json" if isinstance(value, dict) and "responses" in value else "jsonl"
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
        raise ImportProblemsError([_not_utf8(data, exc)]) from None


def _not_utf8(data: bytes, exc: UnicodeDecodeError) -> Problem:
    line = data[: exc.start].count(b"\n") + 1
    return Problem(
        f"line {line}, byte {exc.start}",
        "the file is not UTF-8 text (it may be Latin-1 or Windows-1252, as Excel saves "
        "CSV); save it as 'CSV UTF-8' or UTF-8 text and upload it again",
    )


def _open(source: Source) -> IO[str]:
    """A text stream over the source, without copying it: BOM-aware UTF-8 or UTF-16."""
    if isinstance(source, str):
        return io.StringIO(source, newline="")
    raw: IO[bytes] = (io.BytesIO(source) if isinstance(source, bytes)
                      else open(source, "rb"))  # noqa: SIM115 - closed by RowReader
    bom = raw.read(2)
    raw.seek(0)
    encoding = "utf-16" if bom in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    return io.TextIOWrapper(raw, encoding=encoding, newline="")


def _decode_problem(source: Source, exc: UnicodeDecodeError) -> Problem:
    """Where the file stops being UTF-8 (read again in full: this is the error path)."""
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    try:
        decode(data)
    except ImportProblemsError as located:
        return located.problems[0]
    return Problem("", f"the file is not UTF-8 text: {exc.reason}")


class _Constant(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _Constant(name)


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def _loads(text: str) -> Any:
    return _DECODER.decode(text)


def _constant_problem(where: str, line_text: str, name: str) -> Problem:
    column = line_text.find(name) + 1
    at = f"{where}, column {column}" if column else where
    return Problem(at, f"{name} is not a JSON value (JSON has no NaN or Infinity); write "
                       "null for a missing number, or put it in quotes to keep it as text")


def _open_quote_line(lines: Sequence[str], first_line: int, delimiter: str) -> int:
    """The line where the last quoted field of a CSV record was opened."""
    line, opened, in_quotes, at_start, pending_quote = first_line, first_line, False, True, False
    for text in lines:
        for char in text:
            if pending_quote:  # a quote inside a quoted field: doubled ("") or the end
                pending_quote = False
                if char == '"':
                    continue
                in_quotes = False
            if in_quotes:
                if char == '"':
                    pending_quote = True
            elif char == '"' and at_start:
                in_quotes, opened = True, line
            if not in_quotes:
                at_start = char in (delimiter, "\n", "\r")
            if char == "\n":
                line += 1
    return opened


def _detect_delimiter(head: str) -> str:
    """The separator that gives the header several columns and the first rows as many."""
    best, best_score = ",", (-1, 0)
    for delimiter in DELIMITERS:
        rows: list[list[str]] = []
        try:
            for row in csv.reader(io.StringIO(head, newline=""), delimiter=delimiter):
                rows.append(row)
                if len(rows) > 20:
                    break
        except csv.Error:
            pass
        if not rows or len(rows[0]) < 2:
            continue
        width = len(rows[0])
        score = (sum(len(r) == width for r in rows[1:] if r), width)
        if score > best_score:
            best, best_score = delimiter, score
    return best


class RowReader:
    """The rows of a file as (location, dict), one at a time.

    Syntax problems are collected in ``problems`` (reading stops at the first one that makes
    the rest unreadable); ``columns`` grows as rows are read (CSV: the header).
    """

    def __init__(self, source: Source, filename: str | None = None, *,
                 fmt: FileFormat | None = None):
        self.source = source
        self.filename = filename or (None if isinstance(source, bytes | str)
                                     else Path(source).name)
        self.problems: list[Problem] = []
        self.columns: dict[str, None] = {}
        self.delimiter = ","
        self.rows_read = 0
        try:
            self._stream = _open(source)
        except OSError as exc:
            raise ImportProblemsError([Problem("", f"cannot read the file: {exc.strerror}")],
                                      source=self.filename) from None
        try:
            head = self._stream.read(_HEAD_CHARS)
            head += self._stream.readline()
        except UnicodeDecodeError as exc:
            self._stream.close()
            raise ImportProblemsError([_decode_problem(source, exc)],
                                      source=self.filename) from None
        if not head.strip():
            head += self._stream.read()  # only blanks so far: the rest decides if it is empty
        self._head = head
        self.empty = not head.strip()
        self.format: FileFormat = fmt or detect_format(self.filename, head)
        if self.format == "csv" and not self.empty:
            self.delimiter = _detect_delimiter(head)
        self._record_lines: list[str] = []

    @property
    def description(self) -> str:
        return describe_format(self.format, self.delimiter)

    def close(self) -> None:
        self._stream.close()

    def _lines(self) -> Iterator[str]:
        for line in itertools.chain(io.StringIO(self._head, newline=""), self._stream):
            self._record_lines.append(line)
            yield line

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        if self.empty:
            return
        reader = {"csv": self._csv, "jsonl": self._jsonl, "json": self._json}[self.format]
        try:
            for where, row in reader():
                self.rows_read += 1
                yield where, row
        except UnicodeDecodeError as exc:
            self.problems.append(_decode_problem(self.source, exc))
        finally:
            self._stream.close()

    def _csv(self) -> Iterator[tuple[str, dict[str, Any]]]:
        csv.field_size_limit(1 << 30)  # megabyte-sized responses are normal
        reader = csv.reader(self._lines(), delimiter=self.delimiter, strict=True)
        try:
            header = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            self.problems.append(self._quote_problem(1, reader.line_num, exc))
            return
        columns = [h.strip() for h in header]
        seen: set[str] = set()
        for index, name in enumerate(columns, start=1):
            if not name:
                self.problems.append(Problem("line 1", f"column {index} has no name"))
            elif name in seen:
                self.problems.append(Problem("line 1", f"column {name!r} appears twice"))
            seen.add(name)
        self.columns.update(dict.fromkeys(columns))
        number = 0
        while True:
            start_line = reader.line_num + 1
            self._record_lines.clear()
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                self.problems.append(self._quote_problem(start_line, reader.line_num, exc))
                return
            if not any(v.strip() for v in values):
                continue
            number += 1
            where = f"row {number} (line {start_line})"
            if len(values) != len(columns):
                self.problems.append(Problem(
                    where, f"{len(values)} values but the header has {len(columns)} columns"))
                continue
            yield where, dict(zip(columns, values, strict=True))

    def _quote_problem(self, start_line: int, end_line: int, exc: csv.Error) -> Problem:
        opened = _open_quote_line(self._record_lines, start_line, self.delimiter)
        if "unexpected end of data" in str(exc):
            return Problem(f"line {opened}", (
                "a quoted field starts on this line and is never closed (a \" is missing), "
                "so every row after it would be read into this one field; add the closing "
                "quote, and write a quote inside a field as two (\"\")"))
        return Problem(f"line {opened}", (
            f"the quoted field that starts on this line is not closed properly (at line "
            f"{end_line}: {exc}); a field in quotes must end with a quote followed by the "
            "separator or the end of the line, and a quote inside it is written as two (\"\")"))

    def _jsonl(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for number, line in enumerate(self._lines(), start=1):
            self._record_lines.clear()
            if not line.strip():
                continue
            where = f"line {number}"
            line = line.rstrip("\r\n")
            try:
                value = _loads(line)
            except _Constant as exc:
                self.problems.append(_constant_problem(where, line, str(exc)))
                continue
            except json.JSONDecodeError as exc:
                self.problems.append(Problem(f"{where}, column {exc.colno}",
                                             f"not valid JSON: {exc.msg}"))
                continue
            except RecursionError:
                self.problems.append(Problem(where, too_deep_message()))
                continue
            if self._accept(where, value, "each line must be a JSON object"):
                yield where, value

    def _accept(self, where: str, value: Any, not_object: str) -> bool:
        """A parsed record is one row when it is an object and not too deep; else a problem."""
        if not isinstance(value, dict):
            self.problems.append(Problem(where, not_object))
            return False
        if depth(value) > MAX_NESTING:
            self.problems.append(Problem(where, too_deep_message()))
            return False
        self.columns.update(dict.fromkeys(value))
        return True

    def _json(self) -> Iterator[tuple[str, dict[str, Any]]]:
        text = "".join(self._lines())
        self._record_lines.clear()
        try:
            data = _loads(text)
        except _Constant as exc:
            number = text[: text.find(str(exc))].count("\n") + 1
            self.problems.append(_constant_problem(f"line {number}", "", str(exc)))
            return
        except json.JSONDecodeError as exc:
            self.problems.append(Problem(f"line {exc.lineno}, column {exc.colno}",
                                         f"not valid JSON: {exc.msg}"))
            return
        except RecursionError:
            line = deep_line(text)
            self.problems.append(Problem(f"line {line}" if line else "", too_deep_message()))
            return
        del text
        if isinstance(data, dict) and isinstance(data.get("responses"), list):
            data = data["responses"]
        if not isinstance(data, list):
            self.problems.append(Problem("", "expected a JSON list of objects "
                                             "(or {\"responses\": [...]})"))
            return
        for number, value in enumerate(data, start=1):
            where = f"item {number}"
            if self._accept(where, value, "must be a JSON object"):
                yield where, value
