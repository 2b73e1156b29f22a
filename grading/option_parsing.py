"""What a judge's answer on a multi-choice criterion means: which option it chose.

How the answer object is found is ``grading.parsing``'s job; this module only interprets
it. Answer shapes read: the label (``option``/``label``/``choice``/``answer``/``verdict``,
case and outer spaces ignored, an NA mark tolerated), the 1-based number as listed
(``selected_option``/``number``/``index``, autorubric's shape), and the value (``value``).
A bare number under a label key is the label when an option has that label ("3" on a 1-5
scale), else the listed number. Anything else is a parse failure (the grader asks again).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from grading.options import NA_MARK, CriterionOption, find_option
from grading.parsing import (
    CriteriaAnswer,
    ParseError,
    _pick,
    _reason,
    answer_object,
    as_int,
    checked_answer,
    criteria_entries,
    require_every_criterion,
)

LABEL_KEYS = ("option", "label", "selected_label", "choice", "answer", "verdict",
              "criterion_status")
NUMBER_KEYS = ("selected_option", "option_number", "number", "index")
VALUE_KEYS = ("value",)
OPTION_KEYS = (*LABEL_KEYS, *NUMBER_KEYS, *VALUE_KEYS)


def _listing(options: Sequence[CriterionOption], order: Sequence[int]) -> str:
    return ", ".join(f"{n}. {options[i].label}" for n, i in enumerate(order, start=1))


def read_option(key: str, value: Any, options: Sequence[CriterionOption],
                order: Sequence[int], raw: str) -> int:
    """The original index of the option an answer names (``key`` says the shape)."""
    def fail(why: str) -> ParseError:
        return ParseError(f"the judge chose no valid option ({why}); the options are "
                          f"{_listing(options, order)}", raw)

    if key in VALUE_KEYS:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            raise fail(f"value {value!r} is not a number")
        matches = [i for i, o in enumerate(options)
                   if not o.na and math.isclose(o.value, value, abs_tol=1e-9)]
        if len(matches) != 1:
            raise fail(f"value {value!r} matches {len(matches)} options")
        return matches[0]
    if key not in NUMBER_KEYS and isinstance(value, str):
        text = value.strip()
        if text.endswith(NA_MARK):
            text = text[: -len(NA_MARK)]
        found = find_option(options, text)
        if found is not None:
            return found
    if key not in NUMBER_KEYS and isinstance(value, int | float) and not isinstance(value, bool):
        found = find_option(options, f"{value:g}")
        if found is not None:
            return found
    position = as_int(value)
    if position is not None and 1 <= position <= len(order):
        return order[position - 1]
    raise fail(f"{value!r} is neither a label nor a number from 1 to {len(order)}")


def parse_option_answer(text: str, *, options: Sequence[CriterionOption],
                        order: Sequence[int], quoted: Sequence[str] = ()) -> tuple[int, str]:
    """Read ``{"reason": ..., "option": ...}`` into (original option index, reason);
    ``quoted``: texts whose own JSON objects are quotations, never the answer."""
    obj = answer_object(text, OPTION_KEYS, quoted)
    key, value = _pick(obj, *OPTION_KEYS)
    if key is None:
        raise ParseError("the answer names no option (expected 'option')", text)
    return read_option(key, value, options, order, text), _reason(obj, text)


def parse_mixed_criteria_verdicts(
    text: str, *, criteria: Sequence[Any], orders: Sequence[Sequence[int] | None],
    allow_cannot_assess: bool = False, quoted: Sequence[str] = (),
) -> CriteriaAnswer:
    """Read a one-shot answer for a rubric mixing binary and multi-choice criteria into the
    (Verdict or original option index, reason) that came back, by criterion number; criteria
    left out are missing (``grading.parsing.parse_criteria_verdicts``)."""
    from grading.parsing import NUMBER_KEY_NAMES, VERDICT_KEYS, _verdict

    entries, copied = criteria_entries(text, len(criteria), quoted)
    found: dict[int, tuple[Any, str]] = {}
    for number, entry in entries:
        if number in found:
            raise ParseError(f"criterion {number} is answered more than once", text)
        criterion, order = criteria[number - 1], orders[number - 1]
        if order is None:
            key, raw_verdict = _pick(entry, *VERDICT_KEYS)
            if key is None:
                raise ParseError(f"criterion {number} has no 'verdict'", text)
            answer: Any = _verdict(raw_verdict, text, allow_cannot_assess=allow_cannot_assess)
        else:
            # the entry's own number is not an answer: only the option keys are read
            key, raw_option = _pick(
                {k: v for k, v in entry.items() if k not in NUMBER_KEY_NAMES}, *OPTION_KEYS)
            if key is None:
                raise ParseError(f"criterion {number} names no option", text)
            answer = read_option(key, raw_option, criterion.options, order, text)
        found[number] = (answer, _reason(entry, text))
    return checked_answer(found, copied, len(criteria), text)


def parse_mixed_criteria_answer(
    text: str, *, criteria: Sequence[Any], orders: Sequence[Sequence[int] | None],
    allow_cannot_assess: bool = False, quoted: Sequence[str] = (),
) -> list[tuple[Any, str]]:
    """Read a one-shot answer for a rubric mixing binary and multi-choice criteria into one
    (Verdict or original option index, reason) per criterion, in rubric order."""
    answer = parse_mixed_criteria_verdicts(text, criteria=criteria, orders=orders,
                                           allow_cannot_assess=allow_cannot_assess,
                                           quoted=quoted)
    return require_every_criterion(answer, len(criteria), text)
