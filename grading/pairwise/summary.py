"""Results over many compared pairs: wins / ties / losses of B over A per criterion and
overall, B's win rate with a bootstrap interval, and the position-consistency rate.

Win rate = (wins + ties / 2) / judged: a tie counts half a win for each side, so 0.5 means
"no difference". Per criterion, a pair counts when the criterion got a preference (A, B or
TIE); CANNOT_ASSESS and failed calls are left out and counted apart. Overall, a pair counts
by its winner (``PairReport.winner``: the side its aggregated score favours). The
position-consistency rate of a criterion is the share of its judged pairs where the judge
gave the same answer in both orders (an inconsistent one was made a TIE).

Intervals: the win rate's is a percentile bootstrap over pairs (one set of resampled pairs
for every figure, seeded: the same reports and seed give the same intervals). When every
judged pair went the same way the bootstrap has nothing to resample and would claim a
zero-width interval (3 pairs of 3 won: "100% - 100%"); the Wilson score interval of the win
share ((wins + ties / 2) of judged) is given instead. The position-consistency rate is a
count of successes in judged pairs, so its interval is Wilson's, which stays honest near 0
and 1 and at small n.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grading.bootstrap import (
    Interval,
    percentile_interval,
    resample_weights,
    weighted_sums,
    wilson_interval,
)
from grading.pairwise.report import PairReport

_VALUE = {"B": 1.0, "TIE": 0.5, "A": 0.0}


@dataclass(frozen=True)
class Tally:
    """B's record against A on one criterion (or overall)."""

    wins: int
    ties: int
    losses: int
    win_rate: float | None  # (wins + ties / 2) / judged
    interval: Interval | None

    @property
    def judged(self) -> int:
        return self.wins + self.ties + self.losses


@dataclass(frozen=True)
class CriterionSummary:
    label: str
    tally: Tally
    consistent: int  # pairs answered the same way in both orders
    consistency_rate: float | None
    consistency_interval: Interval | None
    cannot_assess: int
    failed: int


@dataclass(frozen=True)
class ComparisonSummary:
    pairs: int
    criteria: list[CriterionSummary]
    overall: Tally
    consistency_rate: float | None  # over every criterion judgment of every pair
    failed_pairs: int  # pairs with no overall result (nothing scored)


def criterion_label(report: PairReport, index: int) -> str:
    criterion = report.preferences[index].criterion
    return criterion.name or criterion.requirement


def summarize(reports: Sequence[PairReport], *, resamples: int = 1000, seed: int = 0,
              level: float = 0.95) -> ComparisonSummary:
    """Summarise reports made with the same rubric (and grader kind)."""
    import numpy as np  # lazily: the grading library installs without it

    if not reports:
        raise ValueError("no compared pairs to summarise")
    count = len(reports[0].preferences)
    if any(len(r.preferences) != count for r in reports):
        raise ValueError("the reports were not made with the same rubric")
    # Columns: per criterion (value, judged, consistent); overall (value, judged).
    columns = np.zeros((len(reports), 3 * count + 2))
    for row, report in enumerate(reports):
        for index, preference in enumerate(report.preferences):
            if preference.preference in _VALUE:
                columns[row, 3 * index] = _VALUE[preference.preference]
                columns[row, 3 * index + 1] = 1
                columns[row, 3 * index + 2] = 1 if preference.consistent else 0
        if report.winner is not None:
            columns[row, 3 * count] = _VALUE[report.winner]
            columns[row, 3 * count + 1] = 1
    sums = weighted_sums(resample_weights(len(reports), resamples=resamples, seed=seed),
                         columns) if len(reports) >= 2 else []

    def ratio(top: int, bottom: int) -> tuple[float | None, Interval | None]:
        total = columns[:, bottom].sum()
        value = float(columns[:, top].sum() / total) if total else None
        draws = [s[top] / s[bottom] if s[bottom] else None for s in sums]
        return value, (percentile_interval(draws, resamples=resamples, level=level)
                       if sums else None)

    def tally(value_column: int, judged_column: int, values: list[str | None]) -> Tally:
        rate, interval = ratio(value_column, judged_column)
        wins, ties, losses = values.count("B"), values.count("TIE"), values.count("A")
        judged = wins + ties + losses
        if judged and (interval is None or interval.low == interval.high) and (
                max(wins, ties, losses) == judged):
            interval = wilson_interval(wins + ties / 2, judged, level)  # nothing to resample
        return Tally(wins, ties, losses, rate, interval)

    criteria = []
    for index in range(count):
        sides = [r.preferences[index].preference for r in reports]
        judged_pairs = int(columns[:, 3 * index + 1].sum())
        consistent_pairs = int(columns[:, 3 * index + 2].sum())
        rate = consistent_pairs / judged_pairs if judged_pairs else None
        interval = wilson_interval(consistent_pairs, judged_pairs, level)
        criteria.append(CriterionSummary(
            label=criterion_label(reports[0], index),
            tally=tally(3 * index, 3 * index + 1, sides),
            consistent=int(columns[:, 3 * index + 2].sum()), consistency_rate=rate,
            consistency_interval=interval, cannot_assess=sides.count("CANNOT_ASSESS"),
            failed=sum(r.preferences[index].error is not None for r in reports)))
    judged = sum(c.tally.judged for c in criteria)
    consistent = sum(c.consistent for c in criteria)
    return ComparisonSummary(
        pairs=len(reports), criteria=criteria,
        overall=tally(3 * count, 3 * count + 1, [r.winner for r in reports]),
        consistency_rate=consistent / judged if judged else None,
        failed_pairs=sum(r.winner is None for r in reports))
