"""The criteria editor's table: criteria <-> rows, per-row problems, and the live summary.

Pure functions (no Streamlit), so the rules are table-tested without a browser.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pydantic import ValidationError

from grading.aggregation import Aggregate, aggregate_verdicts
from grading.options import CriterionOption
from grading.types import Criterion, Verdict
from ui.option_presets import BINARY, KINDS, SCALE_OF_KIND, kind_of

COLUMNS = ["position", "name", "requirement", "weight", "section", "judged_as", "required"]
TEXT_COLUMNS = ["name", "requirement", "weight", "section"]  # a row with none of them is blank


@dataclass(frozen=True)
class RowProblem:
    row: int  # 1-based, as the table shows it
    label: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"Row {self.row} ({self.label}) · {self.field}: {self.message}"


@dataclass(frozen=True)
class Summary:
    criteria_count: int
    section_count: int
    penalty_count: int
    positive_weight: float
    penalty_weight: float
    best: Aggregate  # every positive criterion met, no penalty triggered
    worst: Aggregate  # no positive criterion met, every penalty triggered
    all_met: Aggregate  # every criterion MET, penalties included


def to_frame(criteria: Sequence[Any]) -> pd.DataFrame:
    """Rows for the editor from CriterionInfo or Criterion objects, positions from 1."""
    rows = [
        {"position": index, "name": c.name or "", "requirement": c.requirement,
         "weight": float(c.weight), "section": c.section or "",
         "judged_as": kind_of(c.options, c.scale_type), "required": bool(c.required)}
        for index, c in enumerate(criteria, start=1)
    ]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    # Nullable "boolean": the editor's new rows arrive with no value, which a plain bool
    # column cannot hold (pandas deprecates the silent cast to object).
    return frame.astype({"position": "Int64", "weight": "float64", "required": "boolean"})


def marked_frame(criteria: Sequence[Any]) -> pd.DataFrame:
    """A read-only view with each criterion's kind spelled out (penalties stand out)."""
    frame = to_frame(criteria)
    frame.insert(4, "kind", ["penalty" if w < 0 else ("not scored" if w == 0 else "earns")
                             for w in frame["weight"]])
    frame["options"] = [options_text(c.options) for c in criteria]
    return frame


def options_text(options: Sequence[CriterionOption] | None) -> str:
    """A criterion's options on one line: "Fail 0 · Partial 0.5 · Pass 1"."""
    if options is None:
        return ""
    return " · ".join(f"{o.label} {'NA' if o.na else f'{o.value:.3g}'}" for o in options)


def parse_options(rows: Sequence[Mapping[str, Any]]) -> tuple[list[CriterionOption], list[str]]:
    """Options from the option editor's rows (blank rows ignored) and what is wrong, each
    naming the option's row."""
    options: list[CriterionOption] = []
    problems: list[str] = []
    for number, row in enumerate(rows, start=1):
        label = _text(row.get("label"))
        na = not _blank(row.get("na")) and bool(row.get("na"))
        if not label and _blank(row.get("value")):
            continue
        if not label:
            problems.append(f"option {number} needs a label")
            continue
        value, problem = _weight(row.get("value")) if not (na and _blank(row.get("value"))) \
            else (0.0, None)
        if problem:
            problems.append(f"option {label!r}: the value "
                            + problem.replace("a weight is needed (positive earns points, "
                                              "negative is a penalty)", "is missing"))
            continue
        if not na and not 0.0 <= value <= 1.0:
            problems.append(f"option {label!r}: the value must be between 0 and 1, "
                            f"got {value:g}")
            continue
        options.append(CriterionOption(label=label, value=value, na=na))
    return options, problems


def _blank(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    try:
        if pd.isna(value):
            return True
    except (TypeError, ValueError):
        pass
    return isinstance(value, str) and not value.strip()


def _text(value: Any) -> str:
    return "" if _blank(value) else str(value).strip()


def _weight(value: Any) -> tuple[float | None, str | None]:
    if _blank(value):
        return None, "a weight is needed (positive earns points, negative is a penalty)"
    if isinstance(value, bool):
        return None, "must be a number"
    try:
        weight = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        return None, f"must be a number, got {value!r}"
    if not math.isfinite(weight):
        return None, "must be a finite number"
    return weight, None


def _unnamed(requirement: str) -> str:
    if not requirement:
        return "new row"
    return f"“{requirement[:30]}…”" if len(requirement) > 30 else f"“{requirement}”"


def from_frame(
    frame: pd.DataFrame, options: Mapping[Any, Sequence[Mapping[str, Any]]] | None = None,
) -> tuple[list[Criterion], list[RowProblem]]:
    """Criteria in the order of the position column (rows without one go last) and every
    problem, each naming its row. Entirely blank rows are ignored. ``options``: the option
    rows of each rating or category criterion, by the frame's index label."""
    records = frame[[c for c in COLUMNS if c in frame.columns]].to_dict("records")
    problems: list[RowProblem] = []
    keyed: list[tuple[float, int, Criterion]] = []
    names: dict[str, int] = {}
    for index, (key, record) in enumerate(zip(frame.index, records, strict=True), start=1):
        if all(_blank(record.get(column)) for column in TEXT_COLUMNS):
            continue
        name = _text(record.get("name"))
        requirement = _text(record.get("requirement"))
        section = _text(record.get("section"))
        label = f"'{name}'" if name else _unnamed(requirement)
        row_problems: list[tuple[str, str]] = []
        if not requirement:
            row_problems.append(("requirement", "write what the response must (or must not) do"))
        weight, weight_problem = _weight(record.get("weight"))
        if weight_problem:
            row_problems.append(("weight", weight_problem))
        if name:
            if name in names:
                row_problems.append(("name", f"'{name}' is already used by row {names[name]}"))
            names.setdefault(name, index)
        position = record.get("position")
        order = math.inf
        if not _blank(position):
            try:
                order = float(position)
            except (TypeError, ValueError):
                row_problems.append(("position", f"must be a number, got {position!r}"))
        kind = _text(record.get("judged_as")) or BINARY
        kinds: dict[str, Any] = {"required": not _blank(record.get("required"))
                                 and bool(record.get("required"))}
        if kind not in KINDS:
            row_problems.append(("judged as", f"choose one of {', '.join(KINDS)}"))
        elif kind != BINARY:
            parsed, option_problems = parse_options((options or {}).get(key, ()))
            row_problems.extend(("options", p) for p in option_problems)
            if not parsed and not option_problems:
                row_problems.append(("options", "add its options in the table below the "
                                                "criteria, or judge it MET/UNMET"))
            kinds.update(options=tuple(parsed), scale_type=SCALE_OF_KIND[kind])
        problems.extend(RowProblem(index, label, f, m) for f, m in row_problems)
        if row_problems or weight is None:
            continue
        try:
            criterion = Criterion(name=name or None, requirement=requirement, weight=weight,
                                  section=section or None, **kinds)
        except ValidationError as exc:
            for error in exc.errors():
                message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
                field = ".".join(str(p) for p in error.get("loc", ())) or (
                    "required" if "required criterion" in message else "options")
                problems.append(RowProblem(index, label, field, _without_where(message)))
            continue
        keyed.append((order, index, criterion))
    if not keyed and not problems:
        problems.append(RowProblem(1, "table", "criteria", "add at least one criterion"))
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [criterion for _, _, criterion in keyed], problems


def _without_where(message: str) -> str:
    """grading names the criterion ("criterion 'x': ..."); the problem table already does."""
    head, sep, rest = message.partition(": ")
    return rest if sep and head.startswith("criterion ") else message


def summarize(criteria: Sequence[Criterion]) -> Summary:
    """Weights and the scores of the best, worst and all-MET responses (grading's aggregation)."""
    def score(verdict_for) -> Aggregate:
        return aggregate_verdicts(criteria, [verdict_for(c) for c in criteria])

    return Summary(
        criteria_count=len(criteria),
        section_count=len({c.section for c in criteria if c.section}),
        penalty_count=sum(1 for c in criteria if c.weight < 0),
        positive_weight=sum(c.weight for c in criteria if c.weight > 0),
        penalty_weight=sum(-c.weight for c in criteria if c.weight < 0),
        best=score(lambda c: _choice(c, c.weight > 0)),
        worst=score(lambda c: _choice(c, c.weight <= 0)),
        all_met=score(lambda c: _choice(c, True)),
    )


def _choice(criterion: Criterion, top: bool) -> Verdict | str:
    """MET/UNMET, or for a multi-choice criterion the label of its highest-valued (``top``)
    or lowest-valued scored option."""
    if criterion.options is None:
        return Verdict.MET if top else Verdict.UNMET
    scored = [o for o in criterion.options if not o.na]
    pick = max if top else min
    return pick(scored, key=lambda o: o.value).label
