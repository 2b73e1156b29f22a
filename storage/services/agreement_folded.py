"""The pattern count's rows folded the way the Agreement report sums them (issue 41).

``agreement_counts.counts_from_rows`` reads the pattern rows (``patterns_query``) twice: each
row's count goes to its pattern (criterion, each source's verdict code), and each unit
where alpha's voters gave both MET and UNMET (one row per unit, at 100,000 responses some
hundred thousand) goes, in the order ``krippendorff_alpha_by_criterion`` meets it, into the
lists alpha sums. ``FoldedRows`` holds both, and ``patched`` changes a few rows without
folding and sorting the others again (storage.services.agreement_kept).
"""

from __future__ import annotations

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
            here = _tally(self.units, _array(list(zip(*entries, strict=True))))
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


def _sorted(units):
    """The rows in order (each row as a tuple of its columns, compared in turn)."""
    import numpy as np

    if len(units) < 2:
        return units
    return units[np.lexsort(units.T[::-1])]


def _groups(units, *others):
    """The rows of every array, sorted, as groups of equal rows: each group's row, the
    number of rows of each array in each group, and the group of every row (the arrays'
    rows one after the other)."""
    import numpy as np

    every = np.concatenate([units, *others]) if others else units
    source = np.concatenate([np.full(len(a), i, dtype=np.int64)
                             for i, a in enumerate((units, *others))])
    if not len(every):
        return every, [np.zeros(0, dtype=np.int64) for _ in (units, *others)], source
    order = np.lexsort(every.T[::-1])
    ordered, source = every[order], source[order]
    starts = np.ones(len(ordered), dtype=bool)
    starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    group = np.cumsum(starts) - 1
    count = int(group[-1]) + 1
    group_of = np.empty(len(every), dtype=np.int64)
    group_of[order] = group
    return (ordered[starts], [np.bincount(group[source == i], minlength=count)
                              for i in range(1 + len(others))], group_of)


def _tally(units, entries):
    """How many times each of ``entries``' rows is among ``units``' rows."""
    _rows, (here, _asked), group_of = _groups(units, entries)
    return here[group_of[len(units):]]


def _merged(units, gone: list, came: list):
    """``units`` without one row per ``gone`` entry (each must be there) and with the
    ``came`` ones, in order."""
    import numpy as np

    if not gone and not came:
        return units
    less = _array(list(zip(*gone, strict=True))) if gone else np.zeros((0, _COLUMNS),
                                                                         dtype=np.int64)
    more = _array(list(zip(*came, strict=True))) if came else np.zeros((0, _COLUMNS),
                                                                         dtype=np.int64)
    rows, (here, out, into), _group_of = _groups(units, less, more)
    kept = here - out
    if (kept < 0).any():
        missing = rows[int(np.flatnonzero(kept < 0)[0])].tolist()
        raise ValueError(f"no unit {tuple(missing)} to take out of the count")
    return np.repeat(rows, kept + into, axis=0)
