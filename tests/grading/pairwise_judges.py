"""Scripted pairwise judges for tests: an answer chosen from what the prompt shows."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

_SHOWN = re.compile(r"<response_a>\n(.*?)\n</response_a>\n\n<response_b>\n(.*?)\n</response_b>",
                    re.DOTALL)
_CRITERION = re.compile(r"<criterion>\n(.*?)\n</criterion>", re.DOTALL)

# (requirement or None for holistic, text shown as A, text shown as B) -> the side named
Decide = Callable[[str | None, str, str], str]


def shown(prompt: str) -> tuple[str | None, str, str]:
    """(requirement, text shown first, text shown second) of a pairwise prompt (after its
    worked examples, when it has some)."""
    prompt = prompt.split("The pair to compare:", 1)[-1]
    first, second = _SHOWN.search(prompt).groups()
    criterion = _CRITERION.search(prompt)
    return (criterion.group(1) if criterion else None), first, second


def route(decide: Decide) -> Callable[[str], str]:
    """A ScriptedGenerate route answering ``{"reason", "preference"}`` from ``decide``."""

    def answer(prompt: str) -> str:
        requirement, first, second = shown(prompt)
        side = decide(requirement, first, second)
        return json.dumps({"reason": f"compared on {requirement}", "preference": side})

    return answer


def prefers(text: str) -> Decide:
    """A consistent judge that always prefers the response ``text``."""
    return lambda _r, first, second: "A" if first == text else "B" if second == text else "TIE"


def always_first(_requirement: str | None, _first: str, _second: str) -> str:
    """A judge with pure position bias: whatever is shown first wins."""
    return "A"
