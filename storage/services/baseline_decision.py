"""Is a judge above, below or inside the people? Only what the 95% intervals support.

- **above** / **below**: the judge's interval lies wholly above (below) every reviewer's
  interval;
- **inside**: the judge's interval lies wholly within the people's figures widened by
  ``MARGIN`` (0.05 macro-F1) on each side: as good as a person, to within 0.05;
- otherwise **can't tell yet**, with n and about how many responses would tell. That number
  is a simple power calculation: an interval's half-width shrinks as 1/sqrt(n), so with
  half-width ``h`` now at ``n`` responses, ``n * (h / g) ** 2`` responses bring it to ``g``.
  ``g`` is the room the figures leave: for above/below, the distance between the judge's
  figure and the nearest people's figure (the people's half-width, which shrinks alike, is
  added to ``h``); for inside, ``MARGIN`` minus how far the judge's figure lies outside the
  people's figures. The smaller of the two is said. It assumes the figures stay where they
  are: hence "about".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from grading.bootstrap import Interval

Position = Literal["inside", "above", "below", "unclear", "unknown"]
MARGIN = 0.05  # macro-F1: "inside the people" means within this of their figures


@dataclass(frozen=True)
class Figure:
    """A number with the count behind it; ``value`` None with ``note`` saying why."""

    value: float | None
    n: int
    note: str = ""
    interval: Interval | None = None  # 95% bootstrap interval over the responses


def n_span(counts: list[int]) -> str:
    if not counts:
        return "0"
    low, high = min(counts), max(counts)
    return str(low) if low == high else f"{low}–{high}"


def people_n(people_f1: dict[str, Figure]) -> str:
    """The n behind the people's figures: ``4`` or ``3–5`` (each reviewer's own n)."""
    return n_span([f.n for f in people_f1.values() if f.value is not None])


def _bounds(figure: Figure) -> tuple[float, float] | None:
    if figure.value is None or figure.interval is None:
        return None
    return figure.interval.low, figure.interval.high


def people_spread(people_f1: dict[str, Figure]) -> str:
    shown = [f for f in people_f1.values() if f.value is not None]
    if not shown:
        return "—"
    values = sorted(f"{f.value:.2f}" for f in shown)
    n = people_n(people_f1)
    if len(set(values)) == 1:
        ci = _ci(shown[0].interval)
        each = f"each of {len(shown)} reviewers, " if len(shown) > 1 else ""
        return f"{values[0]}{ci} ({each}n={n})"
    return f"{', '.join(values)} (n={n})"


def _ci(interval: Interval | None) -> str:
    return "" if interval is None else f" [{interval.low:.2f}, {interval.high:.2f}]"


@dataclass(frozen=True)
class Decision:
    position: Position
    needed: int | None = None  # about how many responses would tell (when "unclear")


def decide(judge: Figure, people_f1: dict[str, Figure]) -> Decision:
    """Above, below or inside the people only when the 95% intervals say so (module
    docstring); otherwise unclear, with about how many responses would tell."""
    people = [f for f in people_f1.values() if f.value is not None]
    if judge.value is None or not people:
        return Decision("unknown")
    mine = _bounds(judge)
    theirs = [_bounds(f) for f in people]
    if mine is None or any(b is None for b in theirs):
        return Decision("unclear", None)
    low, high = min(f.value for f in people), max(f.value for f in people)
    if mine[0] > max(b[1] for b in theirs) + 1e-9:
        return Decision("above")
    if mine[1] < min(b[0] for b in theirs) - 1e-9:
        return Decision("below")
    if mine[0] >= low - MARGIN - 1e-9 and mine[1] <= high + MARGIN + 1e-9:
        return Decision("inside")
    return Decision("unclear", _needed(judge, people, low, high))


def _needed(judge: Figure, people: list[Figure], low: float, high: float) -> int | None:
    assert judge.value is not None and judge.interval is not None
    n = max(judge.n, 1)
    half = (judge.interval.high - judge.interval.low) / 2
    if half <= 0:
        return None
    theirs = max((f.interval.high - f.interval.low) / 2 for f in people if f.interval)
    outside = max(0.0, low - judge.value, judge.value - high)
    options = []
    gap = max(low - judge.value, judge.value - high)  # to the nearest people's figure
    if gap > 0:
        options.append(n * ((half + theirs) / gap) ** 2)
    room = MARGIN - outside
    if room > 0:
        options.append(n * (half / room) ** 2)
    if not options:
        return None
    return max(n + 1, math.ceil(min(options)))


def sentence(label: str, loo: Figure, people_f1: dict[str, Figure], reviewers: int,
              decision: Decision) -> str:
    position = decision.position
    if position == "unknown":
        if reviewers < 2:
            return (f"{label}: no human baseline yet — it needs at least two reviewers on the "
                    "same responses.")
        return (f"{label}: no comparison — {loo.note or 'too few shared MET/UNMET verdicts'}.")
    ci = (f" [95% interval {loo.interval.low:.2f}–{loo.interval.high:.2f}]"
          if loo.interval is not None else "")
    figure = f"{label}: macro-F1 {loo.value:.2f}{ci} against the reviewers (n={loo.n})"
    people = (f"the people's macro-F1: {people_spread(people_f1)}, {reviewers} reviewers")
    if position == "unclear":
        need = (f"need about {decision.needed} reviewed responses"
                if decision.needed is not None else "need more reviewed responses")
        return (f"{figure}; can't tell yet whether it is above, below or inside the people "
                f"(n={loo.n}; {need}) — {people}.")
    where = {"inside": f"inside the people (within {MARGIN:.2f} of their figures)",
             "above": "above the people", "below": "below the people"}[position]
    return f"{figure}, {where} — {people}."
