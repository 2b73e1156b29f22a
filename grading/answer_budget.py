"""How many tokens a judge's answer may take: what a verdict needs, not 4,096.

A verdict is a reason of a sentence or two and a word: a few hundred tokens at most. A model
that runs on (3,699 tokens, 265 s seen on a one-slot local server, which cannot cancel it and
queues the retries behind it) is cut off at what the answer could need, and its cut answer is
asked again. The kind of call is read from the ``response_format`` the grader asks for, so
every caller (the library, the job runner, the CLI) gets the same caps. A reasoning model
thinks before it answers: its thinking has a budget of its own, added to the answer's.
"""

from __future__ import annotations

from typing import Any

from grading.prompts import HOLISTIC_SCHEMA_NAME, ONE_SHOT_SCHEMA_NAME, PER_CRITERION_SCHEMA_NAME

VERDICT_TOKENS = 320  # one criterion: a reason of one or two sentences and the verdict
ONE_SHOT_BASE_TOKENS = 64
ONE_SHOT_TOKENS_PER_CRITERION = 160
HOLISTIC_TOKENS = 480  # a score and a reason of two or three sentences
REASONING_TOKENS = 4096  # a reasoning model's thinking, on top of the answer
# grading.pairwise.prompts' schema names (not imported: that package imports the graders)
PAIRWISE_SCHEMA_NAMES = ("pairwise_preference", "pairwise_holistic_preference")


def _criteria_count(schema: dict[str, Any]) -> int | None:
    """How many entries a one-shot schema asks for (its maxItems, else its number enums)."""
    array = (schema.get("properties") or {}).get("criteria") or {}
    if isinstance(array.get("maxItems"), int):
        return array["maxItems"]
    items = array.get("items") or {}
    numbers: set[int] = set()
    for variant in items.get("anyOf") or [items]:
        enum = ((variant.get("properties") or {}).get("number") or {}).get("enum") or []
        numbers.update(n for n in enum if isinstance(n, int))
    return len(numbers) or None


def answer_tokens(response_format: dict[str, Any] | None) -> int | None:
    """The answer's token budget for a grader's ``response_format``; None when the call is
    not one of the graders' (the caller's own cap applies)."""
    spec = (response_format or {}).get("json_schema") or {}
    name, schema = spec.get("name"), spec.get("schema") or {}
    if name == HOLISTIC_SCHEMA_NAME:
        return HOLISTIC_TOKENS
    if name in PAIRWISE_SCHEMA_NAMES:  # a preference: a reason and a word, like a verdict
        return VERDICT_TOKENS
    if name == ONE_SHOT_SCHEMA_NAME:
        count = _criteria_count(schema)
        return None if count is None else (
            ONE_SHOT_BASE_TOKENS + ONE_SHOT_TOKENS_PER_CRITERION * count)
    if name == PER_CRITERION_SCHEMA_NAME or "option" in (schema.get("properties") or {}):
        return VERDICT_TOKENS
    return None
