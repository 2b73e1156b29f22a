"""The criteria editor's table: criteria <-> rows, per-row problems, and the live summary.

Pure functions (no Streamlit), so the rules are table-tested without a browser.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pydantic import ValidationError

from grading.aggregation import Aggregate, aggregate_verdicts
from grading.types import Criterion, Verdict

COLUMNS = ["position", "name", "requirement", "weight", "section"]


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
         "weight": float(c.weight), "section": c.section or ""}
        for index, c in enumerate(criteria, start=1)
    ]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.astype({"position": "Int64", "weight": "float64"})


def marked_frame(criteria: Sequence[Any]) -> pd.DataFrame:
    """A read-only view with each criterion's kind spelled out (penalties stand out)."""
    frame = to_frame(criteria)
    frame.insert(4, "kind", ["penalty" if w < 0 else ("not scored" if w == 0 else "earns")
                             for w in frame["weight"]])
    return frame


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


def from_frame(frame: pd.DataFrame) -> tuple[list[Criterion], list[RowProblem]]:
    """Criteria in the order of the position column (rows without one go last) and every
    problem, each naming its row. Entirely blank rows are ignored."""
    records = frame[[c for c in COLUMNS if c in frame.columns]].to_dict("records")
    problems: list[RowProblem] = []
    keyed: list[tuple[float, int, Criterion]] = []
    names: dict[str, int] = {}
    for index, record in enumerate(records, start=1):
        if all(_blank(record.get(column)) for column in COLUMNS if column != "position"):
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
        problems.extend(RowProblem(index, label, f, m) for f, m in row_problems)
        if row_problems or weight is None:
            continue
        try:
            criterion = Criterion(name=name or None, requirement=requirement, weight=weight,
                                  section=section or None)
        except ValidationError as exc:
            for error in exc.errors():
                field = ".".join(str(p) for p in error.get("loc", ())) or "row"
                problems.append(RowProblem(index, label, field, error.get("msg", "invalid")))
            continue
        keyed.append((order, index, criterion))
    if not keyed and not problems:
        problems.append(RowProblem(1, "table", "criteria", "add at least one criterion"))
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [criterion for _, _, criterion in keyed], problems


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
        best=score(lambda c: Verdict.MET if c.weight > 0 else Verdict.UNMET),
        worst=score(lambda c: Verdict.UNMET if c.weight > 0 else Verdict.MET),
        all_met=score(lambda c: Verdict.MET),
    )
