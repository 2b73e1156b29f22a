"""verifiers 0.4's rubric files: ``{"criteria": [{"name", "text", "weight", "choices"}]}``.

Their criteria say ``text`` where ours say ``requirement``, weigh 1.0 by default (ours 10.0),
and answer with ``choices`` ordered worst to best, the first worth 0 and the last 1, the rest
evenly spaced by rank; the default ``["no", "yes"]`` is a binary check. A criterion item is
read as verifiers' when it has ``text`` and no ``requirement`` (the two spellings never
share an item), so each format keeps its own default weight.
"""

from __future__ import annotations

import math
from typing import Any

from grading.errors import RubricValidationError
from grading.types import Criterion

VERIFIERS_DEFAULT_WEIGHT = 1.0
BINARY_CHOICES = ["no", "yes"]


def is_verifiers_item(item: Any) -> bool:
    return isinstance(item, dict) and "text" in item and "requirement" not in item


def from_verifiers_item(item: dict[str, Any]) -> dict[str, Any]:
    """The same criterion in our spelling (its line, for messages, is kept by the caller)."""
    out = {("requirement" if key == "text" else key): value for key, value in item.items()}
    out.setdefault("weight", VERIFIERS_DEFAULT_WEIGHT)
    choices = out.pop("choices", BINARY_CHOICES)
    if choices != BINARY_CHOICES:
        out["choices"] = choices
    return out


def to_verifiers(criteria: list[Criterion]) -> dict[str, Any]:
    """A verifiers 0.4 rubric file's data; a criterion it cannot express is an error that
    names it (a negative weight, an NA option, option values not evenly spread from 0 to 1
    in their order)."""
    problems = []
    items = []
    for number, criterion in enumerate(criteria, start=1):
        where = f"criterion {number}" + (f" ('{criterion.name}')" if criterion.name else "")
        if criterion.weight < 0:
            problems.append(f"{where}: verifiers rubrics have no negative weights")
            continue
        item: dict[str, Any] = {"name": criterion.name or f"criterion_{number}",
                                "text": criterion.requirement, "weight": criterion.weight}
        if criterion.options is not None:
            options = criterion.options
            last = len(options) - 1
            if any(o.na for o in options) or any(
                    not math.isclose(o.value, i / last, abs_tol=1e-9)
                    for i, o in enumerate(options)):
                problems.append(f"{where}: verifiers choices are valued 0 to 1 evenly from "
                                "worst to best, without NA; these options are not")
                continue
            item["choices"] = [o.label for o in options]
        items.append(item)
    if problems:
        raise RubricValidationError(problems)
    return {"criteria": items}
