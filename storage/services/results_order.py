"""Ordering, score ranges and score bins of the Results table (storage.services.results):
pure functions over response ids and a function giving each id's scores, one per column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from storage.errors import InvalidInputError

if TYPE_CHECKING:
    from storage.services.results import ResultsFilter


@dataclass(frozen=True)
class ScoreBin:
    run_id: int | None  # None for a panel's bin
    low: float
    high: float
    count: int
    panel_id: int | None = None


def in_range(value: float | None, low: float | None, high: float | None) -> bool:
    if low is None and high is None:
        return True
    if value is None:
        return False
    return (low is None or value >= low) and (high is None or value <= high)


def score_range(ids, filters: ResultsFilter, runs: list[int], panel_ids: list[int],
                scores_of, panel_scores_of) -> list[int]:
    """The responses whose effective score in the chosen run or panel (or in any selected
    run or panel) is within the range."""
    if filters.score_run_id is not None and filters.score_run_id not in runs:
        raise InvalidInputError("the score range applies to a run that is not selected")
    if filters.score_panel_id is not None and filters.score_panel_id not in panel_ids:
        raise InvalidInputError("the score range applies to a judge panel that is not shown")

    def values(i: int) -> list[float | None]:
        if filters.score_panel_id is not None:
            return [panel_scores_of(i)[panel_ids.index(filters.score_panel_id)]]
        if filters.score_run_id is not None:
            return [scores_of(i)[runs.index(filters.score_run_id)]]
        return scores_of(i) + panel_scores_of(i)

    return [i for i in ids if any(in_range(v, filters.min_score, filters.max_score)
                                  for v in values(i))]


def histogram(runs: list[int], ids: list[int], scores_of, bins: int, *,
               panels: bool = False) -> tuple[ScoreBin, ...]:
    """Counts of effective scores per run (or per panel) in ``bins`` equal bins: over 0-1
    when every score is on that scale, else over the scores' own range. Responses without a
    score are left out."""
    if bins < 1 or not ids:
        return ()
    found: list[ScoreBin] = []
    for position, run in enumerate(runs):
        values = [v for v in (scores_of(i)[position] for i in ids) if v is not None]
        if not values:
            continue
        low, high = (0.0, 1.0) if all(0 <= v <= 1 for v in values) else (
            min(values), max(values))
        width = (high - low) / bins or 1.0
        counts = [0] * bins
        for value in values:
            counts[min(bins - 1, int((value - low) / width))] += 1
        found.extend(ScoreBin(run_id=None if panels else run, panel_id=run if panels else None,
                              low=low + k * width, high=low + (k + 1) * width, count=n)
                     for k, n in enumerate(counts))
    return tuple(found)


def sort_ids(ids, sort, sort_run_id, runs, scores_of, review_counts, descending):
    if sort == "response":
        return list(reversed(ids)) if descending else ids
    if sort == "reviewed":
        return sorted(ids, key=lambda i: review_counts.get(i, 0), reverse=descending)
    if sort == "score":
        if not runs:
            return ids
        run = sort_run_id if sort_run_id in runs else runs[0]
        position = runs.index(run)

        def value(i: int) -> float | None:
            return scores_of(i)[position]
    elif sort == "spread":
        def value(i: int) -> float | None:
            known = [s for s in scores_of(i) if s is not None]
            return max(known) - min(known) if len(known) >= 2 else None
    else:
        raise InvalidInputError(f"unknown sort {sort!r}; use response, score, spread or reviewed")
    known = [i for i in ids if value(i) is not None]
    unknown = [i for i in ids if value(i) is None]
    return sorted(known, key=value, reverse=descending) + unknown
