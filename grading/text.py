"""Reading responses to grade: plain strings, tagged strings, thinking/output dicts."""

from __future__ import annotations

import re

from grading.types import ThinkingOutputDict, ToGradeInput

_SECTION = re.compile(r"<(thinking|output)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)


def word_count(text: str) -> int:
    """Whitespace-separated words, the default length measure."""
    return len(text.split())


def parse_thinking_output(text: str) -> ThinkingOutputDict:
    """Split ``<thinking>..</thinking><output>..</output>`` markup; plain text is all output."""
    found: dict[str, str] = {}
    for match in _SECTION.finditer(text):
        found.setdefault(match.group(1).lower(), match.group(2).strip())
    if not found:
        return {"thinking": "", "output": text}
    return {"thinking": found.get("thinking", ""), "output": found.get("output", "")}


def normalize_to_grade_input(to_grade: ToGradeInput) -> ThinkingOutputDict:
    """Turn any accepted input into a dict with both ``thinking`` and ``output`` strings."""
    if isinstance(to_grade, str):
        return parse_thinking_output(to_grade)
    if isinstance(to_grade, dict):
        unknown = set(to_grade) - {"thinking", "output"}
        if unknown:
            raise ValueError(
                f"to_grade dict may only have 'thinking' and 'output' keys, got {sorted(unknown)}"
            )
        thinking = to_grade.get("thinking") or ""
        output = to_grade.get("output") or ""
        if not isinstance(thinking, str) or not isinstance(output, str):
            raise ValueError("to_grade 'thinking' and 'output' must be strings")
        return {"thinking": thinking, "output": output}
    raise TypeError(
        "to_grade must be a string or a dict with 'thinking'/'output', "
        f"got {type(to_grade).__name__}"
    )
