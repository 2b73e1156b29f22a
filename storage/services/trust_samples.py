"""A run's own samples for the trust report's stability figures: which runs asked the judge
several times per criterion, their stored per-sample choices (``grade_criteria.samples``), and
those choices as the code arrays ``grading.trust.stability`` reads."""

from __future__ import annotations

import json

from sqlalchemy import Text, cast, select

from grading.trust.stability import prepare_stability
from storage import models as m


def within_samples(session, run_ids: list[int]
                   ) -> dict[int, tuple[int, dict[tuple[int, int], list]]]:
    """The stored samples of the runs that asked the judge several times per criterion
    (``grade_criteria.samples``); runs that asked once are not read at all."""
    counts = {}
    for run_id, settings in session.execute(
            select(m.RunRow.id, m.RunRow.settings).where(m.RunRow.id.in_(run_ids))):
        count = int(((settings or {}).get("extra") or {}).get("samples", 1))
        if count > 1:
            counts[run_id] = count
    found: dict[int, tuple[int, dict[tuple[int, int], list]]] = {
        run_id: (count, {}) for run_id, count in counts.items()}
    if not counts:
        return found
    rows = session.execute(
        select(m.GradeRow.run_id, m.GradeRow.response_id, m.GradeCriterionRow.criterion_id,
               cast(m.GradeCriterionRow.samples, Text))
        .join(m.GradeRow, m.GradeRow.id == m.GradeCriterionRow.grade_id)
        .where(m.GradeRow.run_id.in_(list(counts)))).all()
    # One JSON parse for every row (80,000 per run at 10,000 x 8): per-row parsing was most
    # of the report's time. A NULL (or JSON null) is a row asked once.
    parsed = json.loads("[" + ",".join(text or "null" for *_key, text in rows) + "]")
    for (run_id, rid, cid, _text), choices in zip(rows, parsed, strict=True):
        if choices:
            found[run_id][1][rid, cid] = choices
    return found


def prepare_within(data, frame, key: str, count: int,
                   stored: dict[tuple[int, int], list]) -> list:
    """Per criterion, the stability figures of one run's own samples: responses x samples
    codes, kept only where the viewer sees the run's verdict and every sample decided."""
    return by_criterion(frame, stack_choices(frame, data.verdicts.get(key, {}), count,
                                             stored))


def stack_choices(frame, seen, count: int, stored: dict[tuple[int, int], list]):
    """responses x criteria x ``count`` codes of per-sample choices, kept only on the
    (response, criterion) of ``seen`` with ``count`` decided samples; -1 elsewhere."""
    import numpy as np

    positions, columns, lookup = frame.positions, frame.columns, frame.lookup
    stacked = np.full((len(positions), len(columns), count), -1, dtype=np.int32)
    rows, cols, codes = [], [], []
    for (rid, cid), choices in stored.items():
        row, column = positions.get(rid), columns.get(cid)
        if row is None or column is None or (rid, cid) not in seen:
            continue
        found = [lookup.get((cid, choice), (0, -1))[1] for choice in choices[:count]]
        if len(found) == count:
            rows.append(row)
            cols.append(column)
            codes.append(found)
    if rows:
        stacked[rows, cols, :] = codes
    return stacked


def by_criterion(frame, stacked) -> list:
    """Per criterion (column), ``prepare_stability`` over ``stacked`` (responses x criteria
    x samples codes, -1 where undecided) on the responses every sample decided."""
    import numpy as np

    found = []
    for j in range(len(frame.columns)):
        codes = stacked[:, j, :]
        rows = np.nonzero((codes >= 0).all(axis=1))[0]
        found.append(prepare_stability(codes[rows].astype(int), frame.units[j],
                                       draws=frame.draws, rows=rows))
    return found
