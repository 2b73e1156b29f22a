"""A counted agreement report's judge verdicts for the trust report, read from the database
as arrays (issue 41).

A counted report (``AgreementData.complete`` False) holds the judges' verdicts of the
reviewed responses only; the trust report needs every one (its frame is every response x
criterion). Rather than gather them again into a dict per source (3.2 million entries with
their reasons at 100,000 responses x 3 runs + a panel), each source's verdicts are read
through the query the report's counts use (``agreement_sides.side_of``: people's verdicts
in force, a run's less the responses a calibrated run showed, a panel's stored decisions),
grouped by the database: one row per (criterion, verdict) with the ids of the responses
that got it. Each group is placed on the frame's rows with numpy (``searchsorted`` on the
frame's sorted ids); no Python object per verdict. Such reports are MET/UNMET only
(``agreement_counts.countable``): a verdict is MET, UNMET or CANNOT_ASSESS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import String, cast, func, select

from grading.types import Verdict
from storage.engine import SessionFactory
from storage.services import agreement_sides
from storage.services.agreement_sources import AgreementData
from storage.services.trust_frame import code_type

# (column, criterion id, verdict, rows of the frame)
Placed = tuple[int, int, Verdict, object]


def grouped_query(side):
    """(criterion, verdict, the comma-separated ids of the responses that got it) of one
    source's ``(response, criterion, verdict, at)`` query."""
    rows = side.subquery("v")
    return (select(rows.c.criterion_id, rows.c.verdict,
                   func.aggregate_strings(cast(rows.c.response_id, String), ","))
            .group_by(rows.c.criterion_id, rows.c.verdict))


@dataclass
class StoredVerdicts:
    """The judges' verdicts of ``data`` (a counted report's) as the trust frame reads them,
    each source read once, when first asked for."""

    sessions: SessionFactory
    data: AgreementData
    found: dict[str, list[Placed]] = field(default_factory=dict)

    def placed(self, key: str, frame) -> list[Placed]:
        """Per (criterion, verdict) of the source ``key``, its column and the frame's rows
        of the responses that got it (none for a source ``data`` does not have)."""
        if key not in self.found:
            self.found[key] = self._read(key, frame)
        return self.found[key]

    def _read(self, key: str, frame) -> list[Placed]:
        import numpy as np

        if not any(s.key == key for s in self.data.sources) or not len(frame.ids):
            return []
        side = agreement_sides.side_of(self.data, key)
        if side is None:
            return []
        with self.sessions() as session:
            groups = session.execute(grouped_query(side)).all()
        found = []
        for cid, verdict, text in groups:
            column = frame.columns.get(cid)
            if column is None:
                continue
            response_ids = np.fromstring(text, dtype=np.int64, sep=",")
            at = frame.positions.rows_of(response_ids)
            # the frame's rows in four bytes each, not eight: every verdict of every
            # source is held so until the share is made (~1 MB a criterion at 100,000)
            rows = at[at >= 0].astype(np.int32)
            if len(rows):
                found.append((column, cid, Verdict(verdict), rows))
        return found

    def coded(self, key: str, frame):
        """As ``trust_frame._coded`` of the source's verdicts: responses x criteria codes
        (-1 where no decided verdict) and where it has a verdict at all."""
        import numpy as np

        shape = (len(frame.positions), len(frame.columns))
        codes = np.full(shape, -1, dtype=code_type(frame))
        present = np.zeros(shape, dtype=bool)
        for column, cid, verdict, rows in self.placed(key, frame):
            codes[rows, column] = frame.codes.get((cid, verdict), -1)
            present[rows, column] = True
        return codes, present
