"""A run's own samples for the trust report's stability figures: which runs asked the judge
several times per criterion, their stored per-sample choices (``grade_criteria.samples``), and
those choices as the code arrays ``grading.trust.stability`` reads.

A criterion's samples say one of a few things (three MET / UNMET samples: eight patterns), so
the database groups them: one row per (run, criterion, samples) with the responses that got
exactly those samples. Each pattern is parsed and coded once, then placed on its responses'
rows with numpy; no Python object per (response, criterion)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import String, Text, cast, func, select

from grading.trust.stability import prepare_stability
from storage import models as m
from storage.services.trust_frame import seen_of


@dataclass(frozen=True)
class StoredSamples:
    """A run's stored samples: ``count`` per criterion (run setting ``samples``), grouped by
    what they say."""

    count: int
    # (criterion id, the samples' choices (None: that sample failed), response ids (array))
    groups: tuple[tuple[int, tuple, object], ...]


def within_samples(session, run_ids: list[int]) -> dict[int, StoredSamples]:
    """The stored samples of the runs that asked the judge several times per criterion
    (``grade_criteria.samples``); runs that asked once are not read at all."""
    import numpy as np

    counts = {}
    for run_id, settings in session.execute(
            select(m.RunRow.id, m.RunRow.settings).where(m.RunRow.id.in_(run_ids))):
        count = int(((settings or {}).get("extra") or {}).get("samples", 1))
        if count > 1:
            counts[run_id] = count
    if not counts:
        return {}
    pattern = cast(m.GradeCriterionRow.samples, Text)
    rows = session.execute(
        select(m.GradeRow.run_id, m.GradeCriterionRow.criterion_id, pattern,
               func.aggregate_strings(cast(m.GradeRow.response_id, String), ","))
        .join(m.GradeRow, m.GradeRow.id == m.GradeCriterionRow.grade_id)
        .where(m.GradeRow.run_id.in_(list(counts)))
        .group_by(m.GradeRow.run_id, m.GradeCriterionRow.criterion_id, pattern)).all()
    # One JSON parse for every pattern. A NULL (or JSON null, or []) is a row asked once.
    parsed = json.loads("[" + ",".join(text or "null" for _r, _c, text, _ids in rows) + "]")
    groups: dict[int, list] = {run_id: [] for run_id in counts}
    for (run_id, cid, _text, ids), choices in zip(rows, parsed, strict=True):
        if choices:
            groups[run_id].append((cid, tuple(choices),
                                   np.array(ids.split(","), dtype=np.int64)))
    return {run_id: StoredSamples(count, tuple(groups[run_id]))
            for run_id, count in counts.items()}


def placed(frame, stored: StoredSamples, seen):
    """Per group of ``stored``, its column and the rows of its responses where ``seen``
    (responses x criteria, bool) is true; groups on no row of the frame are left out."""
    import numpy as np

    ids = frame.ids
    for cid, choices, response_ids in stored.groups:
        column = frame.columns.get(cid)
        if column is None or not len(ids):
            continue
        at = np.minimum(np.searchsorted(ids, response_ids), len(ids) - 1)
        rows = at[ids[at] == response_ids]
        rows = rows[seen[rows, column]]
        if len(rows):
            yield column, cid, choices, rows


def prepare_within(data, frame, key: str, stored: StoredSamples) -> list:
    """Per criterion, the stability figures of one run's own samples: responses x samples
    codes, kept only where the viewer sees the run's verdict and every sample decided."""
    return by_criterion(frame, stack_within(frame, seen_of(data, frame, key), stored))


def stack_within(frame, seen, stored: StoredSamples):
    """responses x criteria x ``count`` codes of a run's stored samples, kept only where
    ``seen`` (responses x criteria) with ``count`` samples; -1 where a sample is undecided
    (failed, CANNOT_ASSESS, an NA option) and elsewhere."""
    import numpy as np

    count = stored.count
    stacked = np.full((len(frame.positions), len(frame.columns), count), -1, dtype=np.int32)
    for column, cid, choices, rows in placed(frame, stored, seen):
        if len(choices) >= count:
            stacked[rows, column, :] = [frame.codes.get((cid, c), -1)
                                        for c in choices[:count]]
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
