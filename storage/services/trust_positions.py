"""The trust report's reads of what the judge was shown where: the option shuffles runs
recorded (grade_criteria.shuffle_order) and where one-shot runs that shuffled the criteria
listed each one (grade_criteria.prompt_position). Figures: grading.trust.position and
grading.trust.criterion_order; gathered by storage.services.trust_report."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from grading.trust.criterion_order import OrderEffect, order_effect
from grading.trust.position import chosen_position
from storage import models as m

# run -> criterion -> [(shown position of the chosen option, options shown)]
Shuffles = dict[int, dict[int, list[tuple[int, int]]]]
# run -> criterion -> [(response, position listed at, from 1)]
Listings = dict[int, dict[int, list[tuple[int, int]]]]


def option_shuffles(session: Session, run_ids: Sequence[int],
                    options: Mapping[int, list[str]]) -> Shuffles:
    """Per run and multi-choice criterion (``options``: its labels), where the chosen
    option was shown, from the runs' recorded option shuffles."""
    found: Shuffles = defaultdict(lambda: defaultdict(list))
    if not options or not run_ids:
        return found
    for run_id, cid, option, order in session.execute(
            select(m.GradeRow.run_id, m.GradeCriterionRow.criterion_id,
                   m.GradeCriterionRow.option, m.GradeCriterionRow.shuffle_order)
            .join(m.GradeRow, m.GradeRow.id == m.GradeCriterionRow.grade_id)
            .where(m.GradeRow.run_id.in_(run_ids),
                   m.GradeCriterionRow.shuffle_order.is_not(None),
                   m.GradeCriterionRow.option.is_not(None))):
        labels = options.get(cid)
        if not labels or option not in labels or not order:
            continue
        shown = chosen_position(order, labels.index(option))
        if shown is not None:
            found[run_id][cid].append((shown, len(order)))
    return found


def criterion_listings(session: Session, run_ids: Sequence[int]) -> Listings:
    """Per run and criterion, where each response's one-shot prompt listed it (runs that
    shuffled the criteria; verdicts with no recorded position are not in it)."""
    found: Listings = defaultdict(lambda: defaultdict(list))
    if not run_ids:
        return found
    for run_id, rid, cid, position in session.execute(
            select(m.GradeRow.run_id, m.GradeRow.response_id,
                   m.GradeCriterionRow.criterion_id, m.GradeCriterionRow.prompt_position)
            .join(m.GradeRow, m.GradeRow.id == m.GradeCriterionRow.grade_id)
            .where(m.GradeRow.run_id.in_(run_ids),
                   m.GradeCriterionRow.prompt_position.is_not(None))):
        found[run_id][cid].append((rid, position))
    return found


def order_effect_of(listed: Sequence[tuple[int, int]] | None, values,
                    rows: Mapping[int, int], criteria: int) -> OrderEffect | None:
    """The criterion-order figure of one run's criterion: ``values`` is the judge's value
    per response row (NaN: no value: CANNOT_ASSESS, an NA option, failed, or a calibrated
    run's example left out); None when the run never recorded where it listed it."""
    if not listed:
        return None
    seen = []
    for rid, position in listed:
        row = rows.get(rid)
        if row is None:
            continue
        value = float(values[row])
        if value == value:  # not NaN
            seen.append((position, criteria, value))
    return order_effect(seen)
