"""A panel's members' alpha units from the grades' verdict keys (issue 41): one row per
member grade (``grades.verdict_key``) instead of one per grade x criterion grouped by
(criterion, response) in the database (2.4 million rows at 100,000 responses x 3 members x
8 criteria). The counts are the same as ``panel_agreement.units_query``'s, which still
counts the responses whose keys do not say every verdict (a failed criterion ``?``, a grade
not keyed yet, a choice that is not a verdict): per (criterion, response) the members' MET,
UNMET and CANNOT_ASSESS answers and the first member (panel order) that answered."""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from grading.types import Verdict
from storage import models as m
from storage.repositories.results import PARTIAL_KEY, UNLABELLED_KEY

_CODE = {Verdict.MET.value: 0, Verdict.UNMET.value: 1, Verdict.CANNOT_ASSESS.value: 2}
_NONE = 3  # no verdict on that criterion
ROWS_AT_A_TIME = 20_000  # member grades read and made arrays at a time


@dataclass(frozen=True)
class Units:
    """One criterion's units, as ``units_query`` rows would sum them."""

    units: int
    pairable: int
    values: int
    met: int
    ca: int
    # (MET, UNMET) of the units where members disagree, by (first member, response)
    disagreeing: list[tuple[int, int]]


def member_units(session: Session, members: list[int], criterion_ids: list[int],
                 binary: list[int], units_query) -> dict[int, Units]:
    """Per binary criterion (``binary``, among the version's ``criterion_ids``), the units of
    the members' answers. ``units_query``: the grouped query for the responses the keys do
    not tell."""
    import numpy as np

    g, grades = m.GradeRow, m.GradeRow.__table__.c
    position = {run_id: i for i, run_id in enumerate(members)}
    # Core rows, not ORM ones, a part at a time, each part made arrays at once (issue 41:
    # 300,000 grades at 100,000 responses x 3 members held as rows took ~170 MB)
    number: dict[str | None, int] = {}  # each key as met
    rid_parts, at_parts, key_parts = [], [], []
    for part in session.connection().execute(
            select(grades.response_id, grades.run_id, grades.verdict_key)
            .where(grades.run_id.in_(members))
            .execution_options(yield_per=ROWS_AT_A_TIME)).partitions():
        response_col, run_col, key_col = zip(*part, strict=True)
        rid_parts.append(np.array(response_col, dtype=np.int64))
        at_parts.append(np.fromiter(map(position.__getitem__, run_col), dtype=np.int64,
                                    count=len(part)))
        key_parts.append(np.fromiter((number.setdefault(key, len(number)) for key in key_col),
                                     dtype=np.int64, count=len(part)))
        del part, response_col, run_col, key_col
    order = sorted(criterion_ids)
    columns = [order.index(c) for c in binary]
    parsed: dict[str | None, list[int] | None] = {UNLABELLED_KEY: [_NONE] * len(binary)}
    for key in number:
        if key not in parsed:
            parsed[key] = _codes(key, len(order), columns)
    told = [key for key, codes in parsed.items() if codes is not None]
    untold = sorted(key for key, codes in parsed.items() if codes is None and key is not None)
    told_at = {key: i for i, key in enumerate(told)}
    table = np.array([parsed[key] for key in told], dtype=np.int8).reshape(-1, len(binary))
    rids, at, keys = (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
                      for parts in (rid_parts, at_parts, key_parts))
    del rid_parts, at_parts, key_parts
    keys = np.array([told_at.get(key, -1) for key in number], dtype=np.int64)[keys]
    # responses a key does not tell: counted by the database, criterion by criterion
    asked = np.unique(rids[keys < 0])
    found = {c: _Found() for c in binary}
    if len(asked):
        unkeyed = select(g.response_id).where(g.run_id.in_(members), or_(
            g.verdict_key.is_(None), g.verdict_key == PARTIAL_KEY, g.verdict_key.in_(untold)))
        counted: dict[int, list] = {c: [] for c in binary}
        for row in session.execute(units_query(members).where(
                m.GradeCriterionRow.criterion_id.in_(binary),
                g.response_id.in_(unkeyed))):
            counted[row.criterion_id].append(
                (row.response_id, row.met, row.unmet, row.ca, row.first))
        for criterion_id, units in counted.items():
            if units:
                found[criterion_id].add(*(np.array(col, dtype=np.int64)
                                          for col in zip(*units, strict=True)))
    kept = ~np.isin(rids, asked)
    rids, at, codes = rids[kept], at[kept], table[keys[kept]]
    responses, row_of = np.unique(rids, return_inverse=True)
    sort = np.lexsort((at, row_of))  # by response, then panel order
    for column, criterion_id in enumerate(binary):
        code = codes[:, column]
        count = {c: np.bincount(row_of[code == c], minlength=len(responses))
                 for c in range(3)}
        answered = code[sort] != _NONE
        firsts = np.full(len(responses), -1)
        seen, first_row = np.unique(row_of[sort][answered], return_index=True)
        firsts[seen] = at[sort][answered][first_row]
        found[criterion_id].add(responses, count[0], count[1], count[2], firsts)
    return {c: found[c].units() for c in binary}


def _codes(key: str | None, width: int, columns: list[int]) -> list[int] | None:
    """A key's verdict per binary criterion; None when the key does not tell them all."""
    if key is None or key == PARTIAL_KEY:
        return None
    try:
        choices = json.loads(key)
    except ValueError:
        return None
    if not isinstance(choices, list) or len(choices) != width:
        return None
    codes = [_CODE.get(choices[i]) if isinstance(choices[i], str) else None for i in columns]
    return None if None in codes else codes


class _Found:
    """A criterion's units from both reads, summed as the grouped query's rows."""

    def __init__(self):
        self.totals = [0, 0, 0, 0, 0]  # units, pairable, values, met, ca
        self.split: list[tuple] = []  # (first, response, met, unmet) arrays of disagreements

    def add(self, responses, met, unmet, ca, firsts) -> None:
        import numpy as np

        unit = (met + unmet + ca) > 0
        pairable = unit & (met + unmet >= 2)
        for i, value in enumerate((unit.sum(), pairable.sum(),
                                   (met + unmet)[pairable].sum(), met[pairable].sum(),
                                   ca[unit].sum())):
            self.totals[i] += int(value)
        both = np.flatnonzero(unit & (met > 0) & (unmet > 0))
        self.split.append((firsts[both], responses[both], met[both], unmet[both]))

    def units(self) -> Units:
        import numpy as np

        units, pairable, values, met, ca = self.totals
        if not self.split:
            return Units(units, pairable, values, met, ca, [])
        firsts, responses, met_of, unmet_of = (np.concatenate(col)
                                               for col in zip(*self.split, strict=True))
        order = np.lexsort((responses, firsts))
        return Units(units, pairable, values, met, ca, list(zip(
            met_of[order].tolist(), unmet_of[order].tolist(), strict=True)))
