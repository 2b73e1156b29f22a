"""Reading and writing multi-choice criteria in rubric files.

Two spellings are read: autorubric's ``options`` (``label``, ``value`` in [0, 1], ``na``)
with ``scale_type``, and verifiers 0.4's ``choices``, ordered from worst to best, whose
values are spread evenly from 0 (the first) to 1 (the last). Files are written in
autorubric's spelling, which keeps every value exactly.
"""

from __future__ import annotations

import math
from typing import Any

from grading.options import SCALE_TYPES, CriterionOption, option_problems
from grading.types import Criterion

_OPTION_FIELDS = ("label", "value", "na")


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return repr(value) if isinstance(value, str | int | float | bool) else type(value).__name__


def _read_options(raw: Any, problems: list[str]) -> list[CriterionOption] | None:
    if not isinstance(raw, list) or not raw:
        problems.append(f"options must be a list of options, got {_describe(raw)}")
        return None
    options = []
    for number, item in enumerate(raw, start=1):
        where = f"option {number}"
        if not isinstance(item, dict):
            problems.append(f"{where} must be a mapping with 'label' and 'value', got "
                            f"{_describe(item)}")
            continue
        extra = [str(k) for k in item if k not in _OPTION_FIELDS]
        label, value, na = item.get("label"), item.get("value"), item.get("na", False)
        if extra:
            problems.append(f"{where}: unknown field(s) {', '.join(map(repr, extra))} (an "
                            "option has label, value and na)")
        if not isinstance(label, str | int | float) or isinstance(label, bool) or not str(
                label).strip():
            problems.append(f"{where}: label is missing or empty")
            continue
        if not isinstance(na, bool):
            problems.append(f"{where} ({label!r}): na must be true or false")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            problems.append(f"{where} ({label!r}): value must be a number from 0 to 1, got "
                            f"{_describe(value)}")
            continue
        if not na and not 0 <= value <= 1:
            problems.append(f"{where} ({label!r}): value must be between 0 and 1, got {value}")
            continue
        options.append(CriterionOption(label=str(label), value=float(value), na=na))
    return options


def _read_choices(raw: Any, problems: list[str]) -> list[CriterionOption] | None:
    """verifiers 0.4: labels from worst to best, valued 0 .. 1 evenly."""
    if not isinstance(raw, list) or len(raw) < 2:
        problems.append(f"choices must be a list of at least two labels, worst first, got "
                        f"{_describe(raw)}")
        return None
    labels = []
    for number, item in enumerate(raw, start=1):
        if isinstance(item, dict):
            item = item.get("label", item.get("name"))
        if not isinstance(item, str | int | float) or isinstance(item, bool) or not str(
                item).strip():
            problems.append(f"choice {number} must be a label, got {_describe(item)}")
            return None
        labels.append(str(item))
    last = len(labels) - 1
    return [CriterionOption(label=label, value=index / last) for index, label in
            enumerate(labels)]


def options_problems(item: dict[str, Any], fields: dict[str, Any]) -> list[str]:
    """Read a raw criterion's options into ``fields``; return its problems."""
    problems: list[str] = []
    if "options" in item and "choices" in item:
        return ["give options or choices, not both"]
    options = None
    if "options" in item:
        options = _read_options(item["options"], problems)
    elif "choices" in item:
        options = _read_choices(item["choices"], problems)
    scale = item.get("scale_type")
    if scale is not None and scale not in SCALE_TYPES:
        problems.append(f"scale_type must be 'ordinal' or 'nominal', got {_describe(scale)}")
    elif scale is not None and options is None and not problems:
        problems.append("scale_type is only for a criterion with options")
    if problems or options is None:
        return problems
    scale_type = scale or "ordinal"
    problems.extend(option_problems(options, scale_type))
    if not problems:
        fields["options"] = tuple(options)
        fields["scale_type"] = scale_type
    return problems


def options_to_data(criterion: Criterion) -> dict[str, Any]:
    """The fields that write a criterion's options back exactly (nothing for binary)."""
    if criterion.options is None:
        return {}
    options = []
    for option in criterion.options:
        entry: dict[str, Any] = {"label": option.label, "value": option.value}
        if option.na:
            entry["na"] = True
        options.append(entry)
    return {"scale_type": criterion.scale_type, "options": options}
