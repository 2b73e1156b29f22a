"""Parsers for the graders' JSON answers. Pure functions; a bad answer raises ``ParseError``.

Tolerated: code fences, prose before or after the JSON object, key case, verdict case and
whitespace, and the ``rubric`` package's keys (``criterion_status``/``explanation``,
``criteria_evaluations``/``criterion_number``, ``overall_score``). Never tolerated (the
answer is retried instead): a missing verdict or score, an unknown verdict, an
unknown/duplicate criterion number, a non-finite score, a field that only copies the answer
format's placeholder (``grading.placeholders``). A one-shot answer that leaves criteria out,
or copies the placeholder in some entries, keeps the entries that judged
(``parse_criteria_verdicts``): the grader asks for the others one by one. A score outside 0-100 is
returned only when the caller allows it (the holistic grader clamps it, as ``rubric`` does). A
missing ``reason`` is tolerated (the verdict is still a judgment); it becomes ``""``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grading.answer_json import ParseError, extract_json_object, preview
from grading.placeholders import ECHO_MESSAGE, echoed_placeholder
from grading.types import Verdict


def _pick(obj: dict[str, Any], *names: str) -> tuple[str | None, Any]:
    """The first of ``names`` present in ``obj`` (keys already lowered) and its value."""
    for name in names:
        if name in obj:
            return name, obj[name]
    return None, None


# The keys of our own prompts first, then the ``rubric`` package's, so that a system prompt
# or a structured-output schema written for ``rubric`` keeps working.
VERDICT_KEYS = ("verdict", "criterion_status")
REASON_KEYS = ("reason", "explanation")
CRITERIA_KEYS = ("criteria", "criteria_evaluations")
NUMBER_KEYS = ("number", "criterion_number", "criterionnumber", "criterion_num", "id", "index")
SCORE_KEYS = ("score", "overall_score")


def _keys_lowered(obj: dict[str, Any]) -> dict[str, Any]:
    return {str(key).strip().lower(): value for key, value in obj.items()}


def answer_object(text: str, keys: tuple[str, ...],
                  quoted: Sequence[str] = ()) -> dict[str, Any]:
    """The judge's answer object, keys lowered; refused when a field only echoes the answer
    format's placeholder (``grading.placeholders``): a copied template is not a judgment."""
    obj = _keys_lowered(extract_json_object(text, keys, quoted))
    echoed = echoed_placeholder(obj)
    if echoed is not None:
        raise ParseError(f"{ECHO_MESSAGE} ({preview(echoed, 60)!r})", text)
    return obj


def _reason(obj: dict[str, Any], raw: str) -> str:
    key, reason = _pick(obj, *REASON_KEYS)
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise ParseError(f"'{key}' must be a string, got {type(reason).__name__}", raw)
    return reason.strip()


def _verdict(value: Any, raw: str, *, allow_cannot_assess: bool) -> Verdict:
    try:
        verdict = Verdict.parse(value)
    except ValueError:
        raise ParseError(f"invalid verdict {value!r}", raw) from None
    if verdict is Verdict.CANNOT_ASSESS and not allow_cannot_assess:
        raise ParseError("verdict CANNOT_ASSESS is not allowed here; use MET or UNMET", raw)
    return verdict


def parse_verdict_answer(text: str, *, allow_cannot_assess: bool = False,
                         quoted: Sequence[str] = ()) -> tuple[Verdict, str]:
    """Read ``{"verdict": ..., "reason": ...}`` into (verdict, reason); ``quoted``: the
    texts the judge may quote (``choose_answer_object``)."""
    obj = answer_object(text, VERDICT_KEYS, quoted)
    key, value = _pick(obj, *VERDICT_KEYS)
    if key is None:
        raise ParseError("the answer has no 'verdict'", text)
    verdict = _verdict(value, text, allow_cannot_assess=allow_cannot_assess)
    return verdict, _reason(obj, text)


def as_int(value: Any) -> int | None:
    """A whole number as judges write one (7, 7.0, "7"); None for anything else (a bool too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _criterion_number(value: Any, raw: str) -> int:
    number = as_int(value)
    if number is None:
        raise ParseError(f"criterion number must be an integer, got {value!r}", raw)
    return number


def entry_number(entry: dict[str, Any], count: int, raw: str) -> int:
    """The 1-based criterion number of a one-shot entry (keys already lowered).

    ``criterion_idx`` is rubric's next release's key and counts from 0; every other number
    key (ours, ``criterion_number``) counts from 1."""
    if "criterion_idx" in entry and not any(k in entry for k in NUMBER_KEYS):
        number = _criterion_number(entry["criterion_idx"], raw) + 1
        if not 1 <= number <= count:
            raise ParseError(f"unknown criterion_idx {number - 1} (expected 0 to {count - 1})",
                             raw)
        return number
    number_key, raw_number = _pick(entry, *NUMBER_KEYS)
    if number_key is None:
        raise ParseError("an entry of 'criteria' has no 'number'", raw)
    number = _criterion_number(raw_number, raw)
    if not 1 <= number <= count:
        raise ParseError(f"unknown criterion number {number} (expected 1 to {count})", raw)
    return number


NUMBER_KEY_NAMES = (*NUMBER_KEYS, "criterion_idx")


@dataclass(frozen=True)
class CriteriaAnswer:
    """What a one-shot answer judged: ``verdicts`` by criterion number (the criteria it left
    out are not there), and ``copied``: the numbers whose entry only copied the answer
    format's placeholder (not judgments: they are asked again like the ones left out)."""

    verdicts: dict[int, tuple[Any, str]]
    copied: tuple[int, ...] = ()


def criteria_entries(text: str, count: int,
                     quoted: Sequence[str] = ()) -> tuple[list[tuple[int, dict[str, Any]]],
                                                          list[int]]:
    """The entries of a one-shot answer's ``criteria`` list as (number, entry with keys
    lowered), and the numbers of the entries that copied the format's placeholder. An answer
    whose every entry copied it is refused with that reason."""
    obj = _keys_lowered(extract_json_object(text, CRITERIA_KEYS, quoted))
    echoed = echoed_placeholder({k: v for k, v in obj.items() if k not in CRITERIA_KEYS})
    if echoed is not None:
        raise ParseError(f"{ECHO_MESSAGE} ({preview(echoed, 60)!r})", text)
    _, items = _pick(obj, *CRITERIA_KEYS)
    if not isinstance(items, list):
        raise ParseError("the answer has no 'criteria' list", text)
    entries: list[tuple[int, dict[str, Any]]] = []
    copied: list[int] = []
    for item in items:
        if not isinstance(item, dict):
            raise ParseError("each entry of 'criteria' must be an object", text)
        entry = _keys_lowered(item)
        found = echoed_placeholder(entry)
        if found is not None:
            echoed = found
            _, value = _pick(entry, *NUMBER_KEYS)
            number = as_int(value)
            if number is not None and 1 <= number <= count:
                copied.append(number)
            continue
        entries.append((entry_number(entry, count, text), entry))
    if not entries and echoed is not None:
        raise ParseError(f"{ECHO_MESSAGE} ({preview(echoed, 60)!r})", text)
    return entries, copied


def parse_criteria_verdicts(
    text: str, count: int, *, allow_cannot_assess: bool = False, quoted: Sequence[str] = ()
) -> CriteriaAnswer:
    """Read ``{"criteria": [{"number", "verdict", "reason"}, ...]}`` into the verdicts that
    came back, by criterion number (1..count). Criteria left out, or whose entry copied the
    placeholder, are missing from ``verdicts``, not an error (the one-shot grader asks for
    them one by one); an answer with no verdict at all, an unknown or repeated number, or a
    bad entry is an error."""
    entries, copied = criteria_entries(text, count, quoted)
    found: dict[int, tuple[Any, str]] = {}
    for number, entry in entries:
        verdict_key, raw_verdict = _pick(entry, *VERDICT_KEYS)
        if verdict_key is None:
            raise ParseError(f"criterion {number} has no 'verdict'", text)
        if number in found:
            raise ParseError(f"criterion {number} is answered more than once", text)
        verdict = _verdict(raw_verdict, text, allow_cannot_assess=allow_cannot_assess)
        found[number] = (verdict, _reason(entry, text))
    return checked_answer(found, copied, count, text)


def checked_answer(found: dict[int, tuple[Any, str]], copied: Sequence[int], count: int,
                   raw: str) -> CriteriaAnswer:
    """``found`` as a CriteriaAnswer; a ParseError when nothing at all was judged."""
    if not found:
        raise ParseError(f"the answer has no verdict for any of the {count} criteria", raw)
    return CriteriaAnswer(found, tuple(sorted({n for n in copied if n not in found})))


def missing_numbers(found: Mapping[int, Any], count: int) -> list[int]:
    """The criterion numbers 1..count with no answer in ``found``."""
    return [n for n in range(1, count + 1) if n not in found]


def require_every_criterion(answer: CriteriaAnswer, count: int, raw: str) -> list[Any]:
    """Every criterion's answer in rubric order; a ParseError for a copied placeholder or
    the numbers left out, if any."""
    if answer.copied:
        raise ParseError(f"{ECHO_MESSAGE} (criterion {answer.copied[0]})", raw)
    found = answer.verdicts
    missing = missing_numbers(found, count)
    if missing:
        listed = ", ".join(str(n) for n in missing)
        raise ParseError(f"no verdict for criterion number(s) {listed}", raw)
    return [found[n] for n in range(1, count + 1)]


def parse_criteria_answer(
    text: str, count: int, *, allow_cannot_assess: bool = False, quoted: Sequence[str] = ()
) -> list[tuple[Verdict, str]]:
    """Read ``{"criteria": [{"number", "verdict", "reason"}, ...]}`` into a list in rubric
    order; every number 1..count must appear exactly once."""
    answer = parse_criteria_verdicts(text, count, allow_cannot_assess=allow_cannot_assess,
                                     quoted=quoted)
    return require_every_criterion(answer, count, text)


def parse_holistic_answer(text: str, *, allow_out_of_range: bool = False,
                          quoted: Sequence[str] = ()) -> tuple[float, str]:
    """Read ``{"score": 0-100, "reason": ...}`` into (score, reason).

    ``allow_out_of_range``: return a finite score outside 0-100 as it is (the grader clamps
    it, as ``rubric`` does, and says so) instead of failing.
    """
    obj = answer_object(text, SCORE_KEYS, quoted)
    key, value = _pick(obj, *SCORE_KEYS)
    if key is None:
        raise ParseError("the answer has no 'score'", text)
    original = value
    if isinstance(value, bool):
        raise ParseError(f"score must be a number, got {value!r}", text)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ParseError(f"score must be a number, got {original!r}", text) from None
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise ParseError(f"score must be a number, got {original!r}", text)
    if not allow_out_of_range and not 0 <= value <= 100:
        raise ParseError(f"score must be between 0 and 100, got {value:g}", text)
    return float(value), _reason(obj, text)
