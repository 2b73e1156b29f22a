"""The trust report's reads of what the judge was shown where: the option shuffles runs
recorded (grade_criteria.shuffle_order) and where one-shot runs that shuffled the criteria
listed each one (grade_criteria.prompt_position). Figures: grading.trust.position and
grading.trust.criterion_order; gathered by storage.services.trust_report."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import repeat

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from grading.trust.criterion_order import OrderEffect, order_effect
from grading.trust.position import chosen_position
from storage import models as m

# run -> criterion -> [(shown position of the chosen option, options shown, response)]
Shuffles = dict[int, dict[int, list[tuple[int, int, int]]]]
# run -> criterion -> [(response, position listed at, from 1)]
Listings = dict[int, dict[int, list[tuple[int, int]]]]


def read_positions(session: Session, run_ids: Sequence[int],
                   options: Mapping[int, list[str]]) -> tuple[Shuffles, Listings]:
    """In one pass over the runs' verdicts: per run and multi-choice criterion
    (``options``: its labels), where the chosen option was shown (recorded option
    shuffles); per run and criterion, where each response's one-shot prompt listed it
    (criterion shuffles; verdicts with no recorded position are not in it)."""
    shuffles: Shuffles = defaultdict(lambda: defaultdict(list))
    listings: Listings = defaultdict(lambda: defaultdict(list))
    if not run_ids:
        return shuffles, listings
    row = m.GradeCriterionRow
    for run_id, rid, cid, option, order, position in session.execute(
            select(m.GradeRow.run_id, m.GradeRow.response_id, row.criterion_id, row.option,
                   row.shuffle_order, row.prompt_position)
            .join(m.GradeRow, m.GradeRow.id == row.grade_id)
            .where(m.GradeRow.run_id.in_(run_ids),
                   or_(and_(row.shuffle_order.is_not(None), row.option.is_not(None)),
                       row.prompt_position.is_not(None)))):
        if position is not None:
            listings[run_id][cid].append((rid, position))
        labels = options.get(cid)
        if order and labels and option in labels:
            shown = chosen_position(order, labels.index(option))
            if shown is not None:
                shuffles[run_id][cid].append((shown, len(order), rid))
    return shuffles, listings


def order_effect_of(listed: Sequence[tuple[int, int]] | None, values,
                    rows: Mapping[int, int], criteria: int,
                    scale: tuple[float, float] | None = None) -> OrderEffect | None:
    """The criterion-order figure of one run's criterion: ``values`` is the judge's value
    per response row (NaN: no value: CANNOT_ASSESS, an NA option, failed, or a calibrated
    run's example left out); ``scale``: the criterion's lowest and highest value; None
    when the run never recorded where it listed it."""
    return pooled_order_effect([(listed, values)], rows, criteria, scale)


def pooled_order_effect(runs: Sequence[tuple[Sequence[tuple[int, int]] | None, object]],
                        rows: Mapping[int, int], criteria: int,
                        scale: tuple[float, float] | None = None) -> OrderEffect | None:
    """``order_effect_of`` over several runs' listings, each with its own values (a
    panel's members: each was shown its own order); None when none recorded any."""
    if not any(listed for listed, _values in runs):
        return None
    import numpy as np

    seen = []
    for listed, values in runs:
        if not listed:
            continue
        rids, positions = (np.fromiter(column, dtype=np.int64, count=len(listed))
                           for column in zip(*listed, strict=True))
        if hasattr(rows, "rows_of"):  # the frame's rows: placed at once
            found = rows.rows_of(rids)
        else:
            found = np.fromiter((rows.get(rid, -1) for rid in rids.tolist()),
                                dtype=np.int64, count=len(rids))
        placed = found >= 0
        value = np.asarray(values, dtype=float)[found[placed]]
        kept = ~np.isnan(value)  # in the listing's order, as read
        seen.extend(zip(positions[placed][kept].tolist(), repeat(criteria),
                        value[kept].tolist(), strict=False))
    return order_effect(seen, scale=scale)
