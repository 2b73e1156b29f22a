"""Parsers for the graders' JSON answers. Pure functions; a bad answer raises ``ParseError``.

Tolerated: code fences, prose before or after the JSON object, key case, verdict case and
whitespace. Never tolerated (the answer is retried instead): a missing verdict or score, an
unknown verdict, an unknown/duplicate/missing criterion number, a score outside 0-100. A
missing ``reason`` is tolerated (the verdict is still a judgment); it becomes ``""``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from grading.types import Verdict

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
PREVIEW_CHARS = 200


class ParseError(ValueError):
    """The judge's answer could not be read. Internal: the retry loop asks again."""

    def __init__(self, message: str, raw: str | None = None):
        super().__init__(message)
        self.raw = raw


def preview(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    """A one-line, shortened copy of a raw answer for error messages."""
    if text is None:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``: bare, inside a code fence, or amid prose."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("the answer is empty", text)
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise ParseError("the answer contains no JSON object", text)


def _keys_lowered(obj: dict[str, Any]) -> dict[str, Any]:
    return {str(key).strip().lower(): value for key, value in obj.items()}


def _reason(obj: dict[str, Any], raw: str) -> str:
    reason = obj.get("reason", "")
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise ParseError(f"'reason' must be a string, got {type(reason).__name__}", raw)
    return reason.strip()


def _verdict(value: Any, raw: str, *, allow_cannot_assess: bool) -> Verdict:
    try:
        verdict = Verdict.parse(value)
    except ValueError:
        raise ParseError(f"invalid verdict {value!r}", raw) from None
    if verdict is Verdict.CANNOT_ASSESS and not allow_cannot_assess:
        raise ParseError("verdict CANNOT_ASSESS is not allowed here; use MET or UNMET", raw)
    return verdict


def parse_verdict_answer(text: str, *, allow_cannot_assess: bool = False) -> tuple[Verdict, str]:
    """Read ``{"verdict": ..., "reason": ...}`` into (verdict, reason)."""
    obj = _keys_lowered(extract_json_object(text))
    if "verdict" not in obj:
        raise ParseError("the answer has no 'verdict'", text)
    verdict = _verdict(obj["verdict"], text, allow_cannot_assess=allow_cannot_assess)
    return verdict, _reason(obj, text)


def _criterion_number(value: Any, raw: str) -> int:
    if isinstance(value, bool):
        raise ParseError(f"criterion number must be an integer, got {value!r}", raw)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise ParseError(f"criterion number must be an integer, got {value!r}", raw)


def parse_criteria_answer(
    text: str, count: int, *, allow_cannot_assess: bool = False
) -> list[tuple[Verdict, str]]:
    """Read ``{"criteria": [{"number", "verdict", "reason"}, ...]}`` into a list in rubric
    order; every number 1..count must appear exactly once."""
    obj = _keys_lowered(extract_json_object(text))
    items = obj.get("criteria")
    if not isinstance(items, list):
        raise ParseError("the answer has no 'criteria' list", text)
    found: dict[int, tuple[Verdict, str]] = {}
    for item in items:
        if not isinstance(item, dict):
            raise ParseError("each entry of 'criteria' must be an object", text)
        entry = _keys_lowered(item)
        if "number" not in entry:
            raise ParseError("an entry of 'criteria' has no 'number'", text)
        if "verdict" not in entry:
            raise ParseError(f"criterion {entry['number']!r} has no 'verdict'", text)
        number = _criterion_number(entry["number"], text)
        if not 1 <= number <= count:
            raise ParseError(f"unknown criterion number {number} (expected 1 to {count})", text)
        if number in found:
            raise ParseError(f"criterion {number} is answered more than once", text)
        verdict = _verdict(entry["verdict"], text, allow_cannot_assess=allow_cannot_assess)
        found[number] = (verdict, _reason(entry, text))
    missing = [n for n in range(1, count + 1) if n not in found]
    if missing:
        listed = ", ".join(str(n) for n in missing)
        raise ParseError(f"no verdict for criterion number(s) {listed}", text)
    return [found[n] for n in range(1, count + 1)]


def parse_holistic_answer(text: str) -> tuple[float, str]:
    """Read ``{"score": 0-100, "reason": ...}`` into (score, reason)."""
    obj = _keys_lowered(extract_json_object(text))
    if "score" not in obj:
        raise ParseError("the answer has no 'score'", text)
    value = obj["score"]
    if isinstance(value, bool):
        raise ParseError(f"score must be a number, got {value!r}", text)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ParseError(f"score must be a number, got {obj['score']!r}", text) from None
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise ParseError(f"score must be a number, got {obj['score']!r}", text)
    if not 0 <= value <= 100:
        raise ParseError(f"score must be between 0 and 100, got {value:g}", text)
    return float(value), _reason(obj, text)
