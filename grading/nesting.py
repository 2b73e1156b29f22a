"""How deeply a JSON or YAML value nests: refused past a limit with the line where it happens.

Python's JSON and YAML readers recurse once per level and crash with RecursionError around a
thousand levels; nothing a person writes by hand nests more than a few levels.
"""

from __future__ import annotations

from typing import Any

MAX_NESTING = 100


def depth(value: Any) -> int:
    """Levels of lists and mappings in a parsed value (a scalar is 0); no recursion."""
    if isinstance(value, dict) and not any(isinstance(v, dict | list | tuple)
                                           for v in value.values()):
        return 1  # the common case: a flat row
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children
                     if isinstance(child, dict | list | tuple))
    return deepest


def deep_line(text: str, limit: int = MAX_NESTING) -> int | None:
    """The line where brackets (or, failing that, YAML indentation) pass ``limit`` levels."""
    level, line, in_string, escaped = 0, 1, False, False
    for char in text:
        if char == "\n":
            line += 1
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            level += 1
            if level > limit:
                return line
        elif char in "]}":
            level -= 1
    for number, row in enumerate(text.splitlines(), start=1):
        if len(row) - len(row.lstrip(" ")) > limit:
            return number
    return None


def too_deep_message(limit: int = MAX_NESTING) -> str:
    return (f"nested more than {limit} levels deep (lists or mappings inside each other); "
            "flatten the data")
