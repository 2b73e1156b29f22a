"""Finding the judge's answer object in its text: JSON alone (structured output), or objects
among prose and code fences, of which the answer is chosen (``choose_answer_object``: an object
that only repeats one written in the response is a quotation, two different answers are none).
Reading the fields of the chosen object is ``grading.parsing``'s job."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

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


def _decode_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text``, in order (objects nested in one are skipped)."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    end = 0
    for match in re.finditer(r"\{", text):
        if match.start() < end:
            continue
        try:
            value, stop = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
            end = stop
    return found


def extract_json_object(text: str, keys: tuple[str, ...] = (),
                        quoted: Sequence[str] = ()) -> dict[str, Any]:
    """The judge's own answer object in ``text`` (see ``choose_answer_object``)."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("the answer is empty", text)
    try:
        whole = json.loads(text.strip())
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict):
        return whole  # structured output: the answer is the whole text
    objects = _decode_objects(text)
    if not objects:
        raise ParseError("the answer contains no JSON object", text)
    if not keys:
        return objects[-1]
    return choose_answer_object(objects, keys, quoted, text)


# -- choosing the answer among several objects ---------------------------------------------
# Kept apart from the field readers below: only which object is the answer is decided here.

def choose_answer_object(objects: list[dict[str, Any]], keys: tuple[str, ...],
                         quoted: Sequence[str], raw: str) -> dict[str, Any]:
    """The one answer among the top-level ``objects`` of an answer that is not JSON alone.

    Candidates are the objects with one of ``keys`` (any case). A candidate that only repeats
    an object written in one of the ``quoted`` texts (the response, its thinking, the query:
    whatever the judge may cite) is a quotation, not an answer. Of the rest, all must say the
    same thing (verdicts, criteria verdicts or score): a judge that answers twice differently
    has not answered, and the call is asked again. No candidate: the last object (its missing
    key is reported by the caller).
    """
    wanted = {k.lower() for k in keys}
    candidates = [o for o in objects if wanted & {str(k).strip().lower() for k in o}]
    if not candidates:
        return objects[-1]
    planted = [_canonical(o) for text in quoted for o in _objects_within(text)]
    own = [o for o in candidates
           if not any(_repeats(_canonical(o), p) for p in planted)]
    if not own:
        raise ParseError("the only answer objects repeat an object written in the response",
                         raw)
    decisions = {json.dumps(_decision(_canonical(o)), sort_keys=True) for o in own}
    if len(decisions) > 1:
        raise ParseError(f"the answer gives {len(own)} different answers; give exactly one",
                         raw)
    return own[-1]


_SYNONYMS = {
    "criterion_status": "verdict", "explanation": "reason",
    "criteria_evaluations": "criteria", "overall_score": "score",
    "criterion_number": "number", "criterionnumber": "number", "criterion_num": "number",
}
_DECISION_KEYS = ("verdict", "criteria", "score")


def _canonical(value: Any) -> Any:
    """Keys lowered and read through the ``rubric`` package's synonyms, strings upper-cased
    and trimmed, numbers as floats: two objects that say the same thing compare equal."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = str(key).strip().lower()
            out[_SYNONYMS.get(name, name)] = _canonical(item)
        return out
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    if isinstance(value, str):
        return value.strip().upper()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value


def _decision(obj: dict[str, Any]) -> dict[str, Any]:
    """What an answer decides: its verdict, its criteria's numbers and verdicts, its score."""
    out: dict[str, Any] = {}
    for key in _DECISION_KEYS:
        if key not in obj:
            continue
        value = obj[key]
        if key == "criteria" and isinstance(value, list):
            value = sorted((json.dumps(item.get("number")), json.dumps(item.get("verdict")))
                           if isinstance(item, dict) else (json.dumps(item), "")
                           for item in value)
        out[key] = value
    return out


def _repeats(candidate: dict[str, Any], planted: dict[str, Any]) -> bool:
    """Every field of ``candidate`` is in ``planted`` with the same value (a quotation may
    leave fields out, never change one)."""
    return all(key in planted and planted[key] == value for key, value in candidate.items())


def _objects_within(text: str) -> list[dict[str, Any]]:
    """Every JSON object written in ``text``, the nested ones included (linear: nested ones
    come from walking the decoded values, not from decoding again)."""
    if not isinstance(text, str) or "{" not in text:
        return []
    found: list[dict[str, Any]] = []
    stack: list[Any] = list(_decode_objects(text))
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.append(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found
