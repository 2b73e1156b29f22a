"""Reading responses to grade: plain strings, tagged strings, thinking/output dicts.

A *string* follows the ``rubric`` package's documented convention: ``<thinking>`` and
``<output>`` tags split it. Text that the convention would drop (outside an ``<output>``
block, or a second block of the same kind) is still dropped, as ``rubric`` does, but never
silently: a ``DroppedTextWarning`` says how much. Callers who already know the two parts
(the app does) pass a dict, which is never re-parsed.
"""

from __future__ import annotations

import re
import warnings

from grading.types import ThinkingOutputDict, ToGradeInput

_THINKING = re.compile(r"<thinking>(.*?)</thinking>", re.DOTALL | re.IGNORECASE)
_OUTPUT = re.compile(r"<output>(.*?)</output>", re.DOTALL | re.IGNORECASE)


class DroppedTextWarning(UserWarning):
    """Text outside the ``<thinking>``/``<output>`` tags of a string was left out."""


def word_count(text: str) -> int:
    """Whitespace-separated words, the default length measure."""
    return len(text.split())


def parse_thinking_output(text: str) -> ThinkingOutputDict:
    """Split ``<thinking>..</thinking>`` and ``<output>..</output>`` out of ``text``.

    No tags: all of it is the output. Thinking without an output tag: the rest of the text
    is the output. Same results as ``rubric.utils.parse_thinking_output``.
    """
    thinking_match = _THINKING.search(text)
    output_match = _OUTPUT.search(text)
    thinking = thinking_match.group(1).strip() if thinking_match else ""
    if output_match:
        output = output_match.group(1).strip()
    elif thinking_match:
        output = _THINKING.sub("", text).strip()
    else:
        output = text
    _warn_if_dropped(text, thinking_match, output_match)
    return {"thinking": thinking, "output": output}


def _warn_if_dropped(text: str, thinking: re.Match | None, output: re.Match | None) -> None:
    if output is None and thinking is None:
        return
    if output is None:
        # Only further thinking blocks can be dropped: the remainder is the output.
        kept = [thinking]
        extra_thinking = len(_THINKING.findall(text)) - 1
        leftover = ""
    else:
        kept = [m for m in (thinking, output) if m is not None]
        extra_thinking = 0
        pieces, position = [], 0
        for match in sorted(kept, key=lambda m: m.start()):
            if match.start() < position:  # the blocks overlap: nothing sensible to report
                return
            pieces.append(text[position:match.start()])
            position = match.end()
        pieces.append(text[position:])
        leftover = "".join(pieces).strip()
    if leftover or extra_thinking > 0:
        what = []
        if leftover:
            what.append(f"{len(leftover)} characters outside the <output> tags")
        if extra_thinking > 0:
            what.append(f"{extra_thinking} further <thinking> block(s)")
        warnings.warn(
            "the text to grade has <thinking>/<output> tags, so only the first block of "
            f"each is graded; left out: {' and '.join(what)}. Pass "
            "{'thinking': ..., 'output': ...} to grade text exactly as it is.",
            DroppedTextWarning,
            stacklevel=3,
        )


def normalize_to_grade_input(to_grade: ToGradeInput) -> ThinkingOutputDict:
    """Turn any accepted input into a dict with both ``thinking`` and ``output`` strings.

    A dict is taken as it is (its text is never searched for tags); keys other than
    ``thinking`` and ``output`` are ignored with a warning, as ``rubric`` does.
    """
    if isinstance(to_grade, str):
        return parse_thinking_output(to_grade)
    if not isinstance(to_grade, dict):
        raise ValueError(
            "to_grade must be a string or a dict with 'thinking'/'output', "
            f"got {type(to_grade).__name__}"
        )
    thinking = to_grade.get("thinking", "")
    output = to_grade.get("output", "")
    if not isinstance(thinking, str):
        raise ValueError(f"'thinking' must be a string, got {type(thinking).__name__}")
    if not isinstance(output, str):
        raise ValueError(f"'output' must be a string, got {type(output).__name__}")
    unknown = set(to_grade) - {"thinking", "output"}
    if unknown:
        warnings.warn(
            f"to_grade dict keys {sorted(map(str, unknown))} are ignored; only 'thinking' "
            "and 'output' are graded",
            UserWarning,
            stacklevel=2,
        )
    return {"thinking": thinking, "output": output}
