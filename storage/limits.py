"""What the database can store, checked before anything is written, the same on SQLite and
PostgreSQL (SQLite would store anything; PostgreSQL refuses with a raw DataError).

Every service that writes text a person or a file supplied asks here first: rubrics, datasets
and responses, human verdicts, runs and model presets. Messages name the field (and the
services add the row or criterion).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from grading.nesting import MAX_NESTING, depth, too_deep_message
from storage.errors import InvalidInputError

NAME_MAX = 200  # rubric, dataset, criterion and section names, reviewers, run names
EXTERNAL_ID_MAX = 500  # a response's own id
MODEL_MAX = 300  # a litellm model name
MAX_FILE_VARIABLE = "RUBRIC_WORKBENCH_MAX_UPLOAD_MB"
DEFAULT_MAX_FILE_MB = 50.0

__all__ = ["DEFAULT_MAX_FILE_MB", "EXTERNAL_ID_MAX", "MAX_FILE_VARIABLE", "MAX_NESTING",
           "MODEL_MAX", "NAME_MAX", "check", "max_file_mb", "text_problem", "value_problem"]


def max_file_mb() -> float:
    """The largest responses file accepted, in MB (the app's upload limit; the CLI's default)."""
    try:
        return float(os.environ.get(MAX_FILE_VARIABLE, "") or DEFAULT_MAX_FILE_MB)
    except ValueError:
        return DEFAULT_MAX_FILE_MB


def _unstorable(text: str) -> str | None:
    if "\x00" in text:
        return (f"contains a NUL character (\\x00) at position {text.index(chr(0)) + 1}, "
                "which the database cannot store; remove it")
    for position, char in enumerate(text, start=1):
        if "\ud800" <= char <= "\udfff":
            return (f"contains an unpaired surrogate ({char!r}) at position {position}, "
                    "which is not text; fix the \\u escape")
    return None


_UNSTORABLE = {0: "\ufffd", **{code: "\ufffd" for code in range(0xD800, 0xE000)}}


def storable(text: str | None) -> str | None:
    """A provider's or model's text made storable: a NUL or a lone surrogate (which PostgreSQL
    refuses as text, and which is not text) becomes U+FFFD. For what people did not type — a
    judge's reason, an error — where refusing would lose a paid answer."""
    if text is None or ("\x00" not in text and text.isascii()):
        return text
    return text.translate(_UNSTORABLE)


def text_problem(value: str | None, *, max_chars: int | None = None) -> str | None:
    """Why this text cannot be stored (None when it can)."""
    if value is None:
        return None
    if max_chars is not None and len(value) > max_chars:
        return f"is {len(value):,} characters long; the limit is {max_chars}"
    if "\x00" in value:
        return _unstorable(value)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _unstorable(value)
    return None


def value_problem(value: Any) -> str | None:
    """Why a JSON value (metadata) cannot be stored: too deep, NaN/Infinity, NUL bytes, or
    not JSON at all (a set, a date)."""
    if isinstance(value, dict | list) and depth(value) > MAX_NESTING:
        return too_deep_message()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return f"a text {problem}"
        elif isinstance(item, float) and not math.isfinite(item):
            return f"holds {item!r}, which JSON cannot store; write null or a string"
        elif isinstance(item, dict):
            for key in item:
                if not isinstance(key, str | int | float | bool | None):
                    return f"has a key {key!r} that is not text"
                problem = text_problem(key) if isinstance(key, str) else None
                if problem:
                    return f"a key {problem}"
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif not (item is None or isinstance(item, bool | int | float)):
            return f"holds a {type(item).__name__}, which is not a JSON value"
    return None


def check(fields: Iterable[tuple[str, str | None, int | None]], where: str = "") -> None:
    """Raise InvalidInputError naming the first field (label, text, max chars) that cannot
    be stored."""
    problems = []
    for label, text, max_chars in fields:
        problem = text_problem(text, max_chars=max_chars)
        if problem:
            problems.append(f"{label} {problem}")
    if problems:
        prefix = f"{where}: " if where else ""
        raise InvalidInputError(prefix + "; ".join(problems))
