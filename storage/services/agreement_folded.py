"""The pattern count's rows folded the way the Agreement report sums them (issue 41).

``agreement_counts.counts_from_rows`` reads the pattern rows (``patterns_query``) twice: each
row's count goes to its pattern (criterion, each source's verdict code), and each unit
where alpha's voters gave both MET and UNMET (one row per unit, at 100,000 responses some
hundred thousand) goes, in the order ``krippendorff_alpha_by_criterion`` meets it, into the
lists alpha sums. ``FoldedRows`` holds both, and ``patched`` changes a few rows without
folding and sorting the others again (storage.services.agreement_kept).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from storage.services.agreement_sides import RANK

Row = tuple  # a pattern row without its count: (criterion, codes..., response, rank)
_COLUMNS = 6  # a unit's entry: first voter, response, its place, criterion, met, unmet


@dataclass(frozen=True, eq=False)
class FoldedRows:
    width: int  # sources counted
    voters: tuple[int, ...]  # alpha's, by their place among the sources
    coded: Counter  # (criterion, codes) -> keys with that pattern
    # Units where the voters disagree, one row each (first voter, response, its place,
    # criterion, met, unmet: int64), in the order alpha sums them over every key; a
    # criterion's units are its rows in the same order (the first voter and the response
    # set it: one unit per response and criterion). An array, not 200,000 tuples: stored
    # and read back whole (storage.services.agreement_inputs).
    units: object

    @classmethod
    def of(cls, rows: Iterable[Sequence], width: int, voters: Sequence[int]) -> FoldedRows:
        """From pattern rows with their counts last."""
        return cls.of_counts(((row[:-1], row[-1]) for row in rows), width, voters)

    @classmethod
    def of_counts(cls, counted: Iterable[tuple[Row, int]], width: int,
                  voters: Sequence[int]) -> FoldedRows:
        """From (pattern row without its count, its count) pairs: a count's items, not
        copied into rows with their counts (177,000 at 100,000 responses)."""
        coded: Counter = Counter()
        columns: list[list[int]] = [[] for _ in range(_COLUMNS)]
        firsts, rids, places, cids, mets, unmets = columns
        # Each row's codes tuple is made once (the pattern's key); its voters' MET and
        # UNMET tallied once per distinct codes (a few hundred among ~177,000 rows at
        # 100,000 responses).
        tallies: dict[tuple, tuple[int, int]] = {}
        end = 1 + width
        for row, n in counted:
            cid, codes = row[0], tuple(row[1:end])
            coded[cid, codes] += int(n)
            rid = row[-2]
            if rid is not None:
                if (tally := tallies.get(codes)) is None:
                    cast = [codes[i] for i in voters]
                    tally = tallies[codes] = (cast.count(1), cast.count(2))
                first, place = divmod(int(row[-1]), RANK)
                firsts.append(first)
                rids.append(rid)
                places.append(place)
                cids.append(cid)
                mets.append(tally[0])
                unmets.append(tally[1])
        return cls(width, tuple(voters), coded, _sorted(_array(columns)))

    @cached_property
    def overall(self) -> list[tuple[int, ...]]:
        """The units over every key, in alpha's order, as tuples."""
        return list(map(tuple, self.units.tolist()))

    @cached_property
    def by_criterion(self) -> dict[int, list[tuple[int, int, int, int]]]:
        """Per criterion its units (first voter, response, met, unmet), in alpha's order."""
        found: dict[int, list] = {}
        for first, rid, _place, cid, met, unmet in self.units.tolist():
            found.setdefault(cid, []).append((first, rid, met, unmet))
        return found

    def met_unmet(self, criterion_id: int | None = None):
        """(MET, UNMET) of the units in alpha's order, as a (units, 2) array
        (``grading.agreement.observed_disagreement`` sums it in C): over every key, or one
        criterion's."""
        units = self.units
        if criterion_id is not None:
            units = units[units[:, 3] == criterion_id]
        return units[:, 4:6]

    def __eq__(self, other) -> bool:
        import numpy as np

        if not isinstance(other, FoldedRows):
            return NotImplemented
        return ((self.width, self.voters) == (other.width, other.voters)
                and self.coded == other.coded
                and np.array_equal(self.units, other.units))

    __hash__ = None  # type: ignore[assignment]

    def count_of(self, row: Row) -> int:
        """How many keys the count holds of ``row`` (without its count): a row of a unit
        where the voters disagree is that unit's alone (how many times its entry is
        here: 0 or 1 in a count, one row per unit), any other is its pattern's (its codes
        are never a disagreeing unit's)."""
        return self.counts_of([row])[0]

    def counts_of(self, rows: Sequence[Row]) -> list[int]:
        """``count_of`` of each row, at once."""
        found = [0] * len(rows)
        entries, at = [], []
        for i, row in enumerate(rows):
            if row[-2] is None:
                found[i] = self.coded.get((row[0], tuple(row[1:1 + self.width])), 0)
            else:
                entries.append(_entry(row, self.width, self.voters))
                at.append(i)
        if entries:
            here = _tally(self.units, _rows(entries))
            for i, n in zip(at, here.tolist(), strict=True):
                found[i] = n
        return found

    def patched(self, changes: Mapping[Row, int],
                before: Mapping[Row, int] | None = None) -> FoldedRows:
        """After the rows' counts moved by ``changes`` (rows without their counts, as
        ``agreement_kept`` keeps them) from ``before`` (default: this count's own,
        ``counts_of``); a new object, this one unchanged. The units that come and go are
        merged into the ordered array at once (20,000 of them at 100,000 responses)."""
        coded = Counter(self.coded)
        moved = [(row, n) for row, n in changes.items() if n]
        for row, n in moved:
            coded[row[0], tuple(row[1:1 + self.width])] += n
        moved = [(row, n) for row, n in moved if row[-2] is not None]
        if before is None:
            had = self.counts_of([row for row, _n in moved])
        else:
            had = [before.get(row, 0) for row, _n in moved]
        gone, came = [], []
        for (row, n), was_n in zip(moved, had, strict=True):
            was, now = was_n > 0, was_n + n > 0
            if was != now:
                (came if now else gone).append(_entry(row, self.width, self.voters))
        units = _merged(self.units, gone, came)
        return FoldedRows(self.width, self.voters,
                          Counter({k: n for k, n in coded.items() if n}), units)


def _entry(row: Sequence, width: int, voters: Sequence[int]) -> tuple[int, ...]:
    cid, codes, rid, rank = row[0], row[1:1 + width], row[-2], int(row[-1])
    cast = [codes[i] for i in voters]
    return (rank // RANK, rid, rank % RANK, cid, cast.count(1), cast.count(2))


def _array(columns: Sequence[Sequence[int]]):
    """Units as an (n, 6) int64 array from their six columns."""
    import numpy as np

    if not columns or not len(columns[0]):
        return np.zeros((0, _COLUMNS), dtype=np.int64)
    return np.stack([np.asarray(c, dtype=np.int64) for c in columns], axis=1)


def _rows(entries: Sequence[tuple[int, ...]]):
    """Units as an (n, 6) int64 array from their rows (``_entry``'s tuples)."""
    import numpy as np

    return np.array(entries, dtype=np.int64).reshape(-1, _COLUMNS)


def _sorted(units):
    """The rows in order (each row as a tuple of its columns, compared in turn)."""
    import numpy as np

    if len(units) < 2:
        return units
    return units[np.lexsort(units.T[::-1])]


def _ranges(units, rows):
    """For each of ``rows`` (an (k, 6) array), where the rows equal to it are among the
    sorted ``units``: (lo, hi) arrays, ``units[lo[i]:hi[i]]`` equal to ``rows[i]`` (empty at
    the place it would go when there is none). Looked up, not sorted again with ``units``:
    the first two columns (first voter, response) by bisection on their own contiguous
    copies, the few units of one response and voter compared as tuples. Sorting the
    ~177,000 units at 100,000 responses with a few rows took ~25 MB more than the units
    (issue 41: the app's peak after a grade lands)."""
    import numpy as np

    k = len(rows)
    lo, hi = np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64)
    if not k:
        return lo, hi
    first = np.ascontiguousarray(units[:, 0])
    starts = np.searchsorted(first, rows[:, 0], side="left")
    ends = np.searchsorted(first, rows[:, 0], side="right")
    del first
    response = np.ascontiguousarray(units[:, 1])
    for i, (row, start, end) in enumerate(zip(rows.tolist(), starts.tolist(), ends.tolist(),
                                              strict=True)):
        # within one first voter the responses are in order; within one response the rest
        near = response[start:end]
        a = start + int(np.searchsorted(near, row[1], side="left"))
        b = start + int(np.searchsorted(near, row[1], side="right"))
        block = list(map(tuple, units[a:b].tolist()))
        key = tuple(row)
        lo[i], hi[i] = a + bisect_left(block, key), a + bisect_right(block, key)
    return lo, hi


def _tally(units, entries):
    """How many times each of ``entries``' rows is among ``units``' rows."""
    lo, hi = _ranges(units, entries)
    return hi - lo


def _merged(units, gone: list, came: list):
    """``units`` without one row per ``gone`` entry (each must be there) and with the
    ``came`` ones, in order: one new array, filled slice by slice between the places
    where a row goes or comes (``_ranges``)."""
    import numpy as np

    if not gone and not came:
        return units
    events: list[tuple[int, int, tuple]] = []  # (place in units, 0 in / 1 out, row)
    if gone:
        wanted = Counter(gone)
        rows = _rows(list(wanted))
        lo, hi = _ranges(units, rows)
        for row, start, end in zip(wanted, lo.tolist(), hi.tolist(), strict=True):
            if end - start < wanted[row]:
                raise ValueError(f"no unit {row} to take out of the count")
            events += [(at, 1, row) for at in range(start, start + wanted[row])]
    if came:
        more = _sorted(_rows(came))
        places, _hi = _ranges(units, more)
        events += [(at, 0, tuple(row)) for at, row in zip(places.tolist(), more.tolist(),
                                                          strict=True)]
    events.sort(key=lambda event: (event[0], event[1]))  # stable: the rows come in order
    out = np.empty((len(units) + len(came) - len(gone), units.shape[1]), dtype=units.dtype)
    source = target = 0
    for at, out_going, row in events:
        size = at - source
        out[target:target + size] = units[source:at]
        target += size
        source = at
        if out_going:
            source += 1
        else:
            out[target] = row
            target += 1
    out[target:] = units[source:]
    return out
