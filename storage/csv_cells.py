"""Spreadsheet-safe CSV cells: the one place every CSV export passes its cells through.

A text cell that a spreadsheet would read as a formula (OWASP "CSV injection": a cell that
starts with ``=``, ``+``, ``-``, ``@``, a tab, a carriage return or a line feed, or their
full-width forms, possibly after spaces) is written with a single quote in front, so the
spreadsheet shows it as text. Separators, quotes and line breaks inside a cell are quoted by
the csv module, so a value cannot start a new cell of its own.

Two decisions make the prefix reversible (the verdict sheet is exported, edited and imported
again):

- A text cell that already starts with a single quote also gets the prefix, so ``restore``
  can remove exactly the quote the exporter added: ``'=x`` is written ``''=x`` and read back
  as ``'=x``.
- A cell that is just a number (``-5``, ``+1.5``, ``-2e3``) is not prefixed: a number cannot
  be a formula, and the user's id ``-5`` stays ``-5`` (defusedcsv makes the same exception).
  Numbers that are numbers (int, float) are never touched.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from typing import IO, Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
ESCAPE = "'"
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
# a text that starts with none of these needs no prefix (every formula start is one character)
RISKY = frozenset((*FORMULA_STARTS, ESCAPE, " "))


def _needs_prefix(text: str) -> bool:
    if text.startswith(ESCAPE):
        return True
    start = text.lstrip(" ")
    return start.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(text.strip())


def spreadsheet_safe(value: Any) -> Any:
    """The cell as a spreadsheet should receive it; non-text values are returned as they are."""
    if isinstance(value, str) and value[:1] in RISKY and _needs_prefix(value):
        return ESCAPE + value
    return value


# a cell with one of these is quoted (csv.writer's QUOTE_MINIMAL, excel dialect: its
# delimiter, quote character and line terminator's characters)
_QUOTED = re.compile(r'[",\r\n]')


def csv_text(value: Any) -> str:
    """One cell as ``csv.writer`` (excel dialect) writes it, spreadsheet-safe (a text that
    could read as a formula prefixed): None as nothing, numbers as ``str``, a text with a
    separator, quote or line break quoted, its quotes doubled. Lets a row whose fixed
    cells are written once be joined from its own cells (storage/export_csv.py);
    tests/storage/test_csv_text.py holds it to ``csv.writer`` cell for cell."""
    if value is None:
        return ""
    if isinstance(value, str):
        if value[:1] in RISKY and _needs_prefix(value):
            value = ESCAPE + value
    else:
        value = repr(value) if isinstance(value, float) else str(value)  # as csv.writer
    if _QUOTED.search(value) is None:
        return value
    return '"' + value.replace('"', '""') + '"'


_SEP = "\x00"
# a text after the separator starting with one of these may need the prefix
_RISKY_AFTER = re.compile(_SEP + "[" + re.escape("".join(sorted(RISKY))) + "]")


def csv_texts(values: Sequence[Any]) -> list[str]:
    """``[csv_text(v) for v in values]``, with a few passes over the row's text joined
    instead of a function call per cell: when no text may need the prefix (nearly every
    row), the texts are the cells, quoted where they must be; otherwise (or when a text
    holds the separator) each cell is written by ``csv_text``."""
    texts = [v if type(v) is str else "" if v is None else csv_text(v) for v in values]
    joined = _SEP.join(texts)
    if (joined.count(_SEP) != len(texts) - 1 or joined[:1] in RISKY
            or _RISKY_AFTER.search(joined)):
        return [csv_text(v) for v in values]
    if '"' in joined or "," in joined or "\n" in joined or "\r" in joined:
        return ['"' + t.replace('"', '""') + '"'
                if '"' in t or "," in t or "\n" in t or "\r" in t else t for t in texts]
    return texts


def restore(text: str) -> str:
    """Undo ``spreadsheet_safe`` on a cell read back from an exported sheet."""
    if text.startswith(ESCAPE) and _needs_prefix(text[1:]):
        return text[1:]
    return text


class SafeWriter:
    """``csv.writer`` whose every cell (header included) goes through ``spreadsheet_safe``."""

    def __init__(self, target: IO[str], **options: Any):
        self._writer = csv.writer(target, **options)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([spreadsheet_safe(cell) for cell in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(target: IO[str], **options: Any) -> SafeWriter:
    return SafeWriter(target, **options)
