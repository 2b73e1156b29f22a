"""The placeholders our prompts write in the answer format, and how to spot a judge that
copied one instead of judging.

A small model shown ``{"reason": "<one or two sentences>", ...}`` may answer with that very
text: the answer parses, and a verdict would be stored with no judgment behind it. Every
answer parser refuses an answer whose fields echo a placeholder (``grading.parsing``).
"""

from __future__ import annotations

import re
from typing import Any

REASON = "<one or two sentences>"
HOLISTIC_REASON = "<two or three sentences>"
CRITERION_NUMBER = "<criterion number>"
SCORE = "<a number from 0 to 100>"
OPTION = "<the label of the chosen option, exactly as listed>"
PLACEHOLDERS = (REASON, HOLISTIC_REASON, CRITERION_NUMBER, SCORE, OPTION)

ECHO_MESSAGE = "the judge copied the answer format's placeholder instead of judging"

# A whole value in one pair of angle brackets ("<your reason>", '<"MET" or "UNMET">') is a
# template slot, never a judgment; the listed placeholders are also caught without their
# brackets ("one or two sentences") and inside a longer text.
_SLOT = re.compile(r"<[^<>\n]{1,120}>")
_BARE = {p.strip("<>").lower() for p in PLACEHOLDERS}


def _flat(text: str) -> str:
    return " ".join(text.split()).lower()


def is_placeholder(value: str) -> bool:
    """Whether a string field of an answer is a copy of the format's placeholder."""
    flat = _flat(value)
    if _SLOT.fullmatch(flat):
        return True
    if flat.strip("<>. ") in _BARE:
        return True
    return any(p in flat for p in PLACEHOLDERS)


def echoed_placeholder(value: Any) -> str | None:
    """The first string anywhere in ``value`` (an answer object) that is a placeholder."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if is_placeholder(item):
                return item
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return None
