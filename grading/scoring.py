"""``compute_score``: a verdict sheet (one verdict per criterion) -> a score, checked as
strictly as autorubric's ``Rubric.compute_score`` checks it, then scored by the one
aggregation function."""

from __future__ import annotations

from collections.abc import Sequence

from grading.aggregation import Aggregate, aggregate_verdicts
from grading.types import Criterion, Verdict


def check_sheet(criteria: Sequence[Criterion], verdicts: Sequence[Verdict | str]) -> None:
    """Raise a ValueError naming the criterion for a verdict that fits no criterion: a
    binary verdict that is not exactly MET / UNMET / CANNOT_ASSESS, a label that is not an
    option of its multi-choice criterion."""
    if len(verdicts) != len(criteria):
        raise ValueError(f"expected {len(criteria)} verdicts (one per criterion), "
                         f"got {len(verdicts)}")
    for number, (criterion, verdict) in enumerate(zip(criteria, verdicts, strict=True), 1):
        where = f"criterion {number}" + (f" ('{criterion.name}')" if criterion.name else "")
        if criterion.options is not None:
            if not isinstance(verdict, str) or isinstance(verdict, Verdict):
                raise ValueError(f"{where} is multi-choice: its verdict must be an option "
                                 f"label, got {verdict!r}")
            try:
                criterion.find_option_by_label(verdict)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
            continue
        if isinstance(verdict, Verdict):
            continue
        if not isinstance(verdict, str) or verdict not in Verdict.__members__:
            raise ValueError(f"{where}: invalid verdict {verdict!r}; use 'MET', 'UNMET' or "
                             "'CANNOT_ASSESS'")


def compute_score(
    criteria: Sequence[Criterion], verdicts: Sequence[Verdict | str], *,
    normalize: bool = True, cannot_assess: str = "skip", partial_credit: float = 0.5,
) -> Aggregate:
    check_sheet(criteria, verdicts)
    return aggregate_verdicts(criteria, verdicts, normalize=normalize,
                              cannot_assess=getattr(cannot_assess, "value", cannot_assess),
                              partial_credit=partial_credit)
