"""The human baseline as one criterion x judge grid: is each judge as good as a person?

One row per criterion, one cell per judge: the judge's figure, its 95% interval, n and where
it stands against the people (``baseline_decision.decide``: inside / above / below only when
the intervals support it, otherwise "can't tell yet" with about how many responses would tell).

- **MET/UNMET criteria**: the judge's macro-F1 against the other reviewers, each reviewer left
  out in turn, next to the reviewers' own macro-F1 against the others (``human_baseline``).
- **Multi-choice criteria** (options, ordinal or nominal): the same comparison with the
  kappa of the scale (quadratic-weighted on an ordinal scale) in place of macro-F1
  (``option_loo``); the reviewers' agreement with each other beside it (that kappa between two
  reviewers, Krippendorff's alpha on the scale between more: ``option_baseline``).

A figure with fewer than ``MIN_N`` pairs, or with no interval (its value undefined on most
resamples), is "not enough reviews": no value and no position is claimed from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.dto import CriterionInfo
from storage.services.agreement import criterion_kinds
from storage.services.agreement_sources import AgreementData
from storage.services.baseline_decision import (
    Figure,
    Position,
    decide,
    people_n,
    people_spread,
)
from storage.services.human_baseline import HumanBaseline
from storage.services.option_baseline import among_figure
from storage.services.option_loo import leave_one_out

MIN_N = 3  # pairs: below this a figure is "not enough reviews"


def enough(figure: Figure) -> bool:
    """A figure the grid shows: a value, its interval, and at least ``MIN_N`` pairs."""
    return figure.value is not None and figure.interval is not None and figure.n >= MIN_N


@dataclass(frozen=True)
class GridCell:
    figure: Figure
    position: Position  # "unknown" when the figure is not enough
    needed: int | None = None  # "unclear": about how many reviewed responses would tell


@dataclass(frozen=True)
class GridRow:
    criterion: CriterionInfo
    scale: str  # "MET/UNMET", "ordinal" or "nominal"
    metric: str  # what the judges' cells hold
    reviewers: int  # how many reviewers answered it
    among_method: str  # the reviewers' agreement metric ("none": fewer than two)
    among: Figure
    people: str  # the people's figure(s) the judges are compared with, as they are
    cells: dict[str, GridCell]  # judge key -> cell


@dataclass(frozen=True)
class BaselineGrid:
    judges: tuple[tuple[str, str], ...]  # (key, label), in the report's order
    rows: tuple[GridRow, ...]

    @property
    def has_people(self) -> bool:
        return any(row.reviewers >= 2 for row in self.rows)


def _people(people: dict[str, Figure]) -> str:
    """The people's figures as they are, or "not enough reviews" when none is enough."""
    if any(enough(f) for f in people.values()):
        return people_spread(people)
    return f"not enough reviews (n={people_n(people)})" if people else "—"


def _cell(figure: Figure, people: dict[str, Figure]) -> GridCell:
    if not enough(figure) or not any(enough(f) for f in people.values()):
        return GridCell(figure, "unknown")
    decision = decide(figure, people)
    return GridCell(figure, decision.position, decision.needed)


def build_grid(data: AgreementData, baseline: HumanBaseline) -> BaselineGrid:
    judges = tuple((s.key, s.label) for s in data.verdict_sources if not s.is_human)
    binary = {row.criterion.id: row for row in baseline.criteria}
    kinds = criterion_kinds(data.criteria)
    rows = []
    for criterion in data.criteria:
        scale = kinds.get(criterion.id)
        if scale is None:
            row = binary.get(criterion.id)
            if row is None:
                continue
            method = {"kappa": "Cohen's kappa", "alpha": "Krippendorff's alpha"}.get(
                row.method, "none")
            cells = {j.source_key: _cell(j.loo_f1, row.people_f1) for j in row.judges}
            rows.append(GridRow(criterion, "MET/UNMET", "macro-F1 vs the other reviewers",
                                len(row.reviewers), method, row.among, _people(row.people_f1),
                                cells))
            continue
        method, count, among = among_figure(data, criterion.id, scale)
        people, theirs = leave_one_out(data, criterion.id, scale, [key for key, _ in judges])
        cells = {key: _cell(theirs[key], people) if key in theirs
                 else GridCell(Figure(None, 0, "fewer than two reviewers"), "unknown")
                 for key, _label in judges}
        rows.append(GridRow(criterion, scale.scale_type,
                            f"{scale.kappa_name} vs the other reviewers", count, method,
                            among, _people(people), cells))
    return BaselineGrid(judges, tuple(rows))
