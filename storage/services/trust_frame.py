"""The trust report's responses and criteria as arrays (row = response, column = criterion):
verdicts as category codes and as values, made once per report and shared by every figure."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter

from grading.trust.figures import SharedDraws
from grading.types import Verdict
from storage.dto import CriterionInfo
from storage.services.agreement_sources import HUMAN
from storage.services.id_column import IdColumn


class Positions(IdColumn):
    """Response id -> its row, over the frame's ascending ids (``Frame.ids``): the mapping
    a dict of every response was (~8 MB at 100,000 responses, held with the trust share),
    in the ids' own array. Whole columns of ids are placed at once (``rows_of``)."""

    __slots__ = ()

    def __init__(self, ids) -> None:
        import numpy as np

        self._ids = np.ascontiguousarray(ids, dtype=np.int64)

    def same_ids(self, rids) -> bool:
        """Every response of ``rids`` (ascending, distinct) is a row, and no other."""
        import numpy as np

        return bool(np.array_equal(self._ids, np.fromiter(rids, dtype=np.int64)))

    def _value(self, i: int) -> int:
        return i

    def __repr__(self) -> str:
        return f"Positions({len(self)} rows)"


@dataclass
class Frame:
    """The report's responses and criteria as arrays: row = response, column = criterion."""

    positions: Positions
    columns: dict[int, int]
    lookup: dict[tuple[int, object], tuple[int, int]]  # (criterion, choice) -> (column, code)
    codes: dict[tuple[int, object], int]  # (criterion, choice) -> code
    values: list[list[float]]  # per column, each code's value
    units: list[list[float]]  # per column, each code's value rescaled to [0, 1]
    lengths: object
    ids: object = None  # the response ids of the rows, ascending (numpy int64)
    matrices: dict[str, object] = field(default_factory=dict)
    seen: dict[str, object] = field(default_factory=dict)  # key -> where it has a verdict
    human: object = None
    sample: object = None
    draws: SharedDraws | None = None
    reviewed: dict[int, int] = field(default_factory=dict)
    reviewed_draws: SharedDraws | None = None
    # A counted report's judge verdicts, read from the database (trust_stored.StoredVerdicts;
    # its data holds the reviewed responses' only); None: every source from ``data.verdicts``
    stored: object = None


def value_map(criterion: CriterionInfo) -> dict[object, float]:
    """A verdict (or option label) -> its number: MET 1 / UNMET 0, an option's value.
    CANNOT_ASSESS and NA options are not in it (no value)."""
    if criterion.options is None:
        return {Verdict.MET: 1.0, Verdict.UNMET: 0.0}
    return {o.label: o.value for o in criterion.options if not o.na}


def codes(criterion: CriterionInfo) -> tuple[dict[object, float], list[float]]:
    """Category codes for the stability figures and each code's value rescaled to [0, 1]
    (the noisy flag's variance)."""
    if criterion.options is None:
        return {Verdict.UNMET: 0, Verdict.MET: 1}, [0.0, 1.0]
    kept = [o for o in criterion.options if not o.na]
    low = min(o.value for o in kept)
    span = (max(o.value for o in kept) - low) or 1.0
    return {o.label: i for i, o in enumerate(kept)}, [(o.value - low) / span for o in kept]


def make_frame(criteria, lengths: dict[int, int]) -> Frame:
    """The frame of these criteria over the responses of ``lengths`` (id -> characters)."""
    import numpy as np

    ids = sorted(lengths)
    coded = [codes(c) for c in criteria]
    lookup = {(c.id, choice): (j, code) for j, c in enumerate(criteria)
              for choice, code in coded[j][0].items()}
    return Frame(
        positions=Positions(ids),
        columns={c.id: j for j, c in enumerate(criteria)},
        lookup=lookup, codes={key: code for key, (_j, code) in lookup.items()},
        values=[[value_map(c)[choice] for choice in coded[j][0]]
                for j, c in enumerate(criteria)],
        units=[units for _codes_of, units in coded],
        lengths=np.asarray([lengths[r] or 0 for r in ids], dtype=float),
        ids=np.asarray(ids, dtype=np.int64))


def places(keys, frame: Frame):
    """The rows and columns of (response, criterion) ``keys`` (a sized iterable), -1 where
    the frame has no such response or criterion: mapped in C (``map``), not in a Python
    loop, as the report places 80,000 verdicts per source at 10,000 x 8."""
    import numpy as np

    count = len(keys)
    rows = frame.positions.rows_of(np.fromiter(map(itemgetter(0), keys), dtype=np.int64,
                                               count=count))
    cols = np.fromiter(map(frame.columns.get, map(itemgetter(1), keys), repeat(-1)),
                       dtype=np.int64, count=count)
    return rows, cols


def code_matrix(verdicts, frame: Frame):
    """responses x criteria array of category codes (``codes``); -1 where no decided
    verdict."""
    return _coded(verdicts, frame)[0]


def code_type(frame: Frame):
    """The smallest integer type the frame's codes (and -1) fit: one byte a code unless a
    criterion has 127 options or more. The judges' matrices are made in it (at 100,000
    responses x 8 criteria, 0.8 MB a judge, not 3.2: held through the trust tab's making)."""
    import numpy as np

    return np.int8 if max(map(len, frame.values), default=0) < 127 else np.int32


def _coded(verdicts, frame: Frame):
    """``code_matrix`` and where the verdicts are at all (decided or not)."""
    import numpy as np

    rows, cols = places(verdicts, frame)
    found_codes = np.fromiter(
        map(frame.codes.get, zip(map(itemgetter(1), verdicts), verdicts.values(),
                                 strict=True), repeat(-1)),
        dtype=np.int32, count=len(verdicts))
    shape = (len(frame.positions), len(frame.columns))
    kept = (rows >= 0) & (cols >= 0)
    found = np.full(shape, -1, dtype=code_type(frame))
    found[rows[kept], cols[kept]] = found_codes[kept]
    present = np.zeros(shape, dtype=bool)
    present[rows[kept], cols[kept]] = True
    return found, present


def values(coded, frame: Frame):
    """A code matrix as values (MET 1 / UNMET 0, option values); NaN where no verdict."""
    import numpy as np

    found = np.full(coded.shape, np.nan)
    for j in range(len(frame.values)):
        found[:, j] = column_values(coded[:, j], frame, j)
    return found


def column_values(column, frame: Frame, j: int):
    """The codes of the frame's column ``j`` as values, NaN where no verdict: one column of
    ``values``, the same floats."""
    import numpy as np

    found = np.full(len(column), np.nan)
    kept = column >= 0
    found[kept] = np.asarray(frame.values[j])[column[kept]]
    return found


def codes_of(data, frame: Frame, key: str):
    """A source's code matrix, made once per report (a judge of a counted report: from the
    database, ``frame.stored``)."""
    if key not in frame.matrices:
        if frame.stored is not None and key != HUMAN:
            frame.matrices[key], frame.seen[key] = frame.stored.coded(key, frame)
        elif key != HUMAN and not data.complete:
            # a counted report holds the judges' verdicts of the reviewed responses only:
            # made from it, the codes would be wrong without a word (trust_judges lets the
            # stored reads go before the figures are finished)
            raise RuntimeError(f"{key}'s verdicts asked for after the trust frame let go of "
                               "the judges' verdicts read from the database")
        else:
            frame.matrices[key], frame.seen[key] = _coded(data.verdicts.get(key, {}), frame)
    return frame.matrices[key]


def seen_of(data, frame: Frame, key: str):
    """responses x criteria: where the source has a verdict the viewer sees (decided or
    not), made once per report."""
    codes_of(data, frame, key)
    return frame.seen[key]
