"""The pattern count's rows folded the way the Agreement report sums them (issue 41).

``agreement_counts.counts_from_rows`` reads the pattern rows (``patterns_query``) twice: each
row's count goes to its pattern (criterion, each source's verdict code), and each unit
where alpha's voters gave both MET and UNMET (one row per unit, at 100,000 responses some
hundred thousand) goes, in the order ``krippendorff_alpha_by_criterion`` meets it, into the
lists alpha sums. ``FoldedRows`` holds both, and ``patched`` changes a few rows without
folding and sorting the others again (storage.services.agreement_kept).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from storage.services.agreement_sides import RANK

Row = tuple  # a pattern row without its count: (criterion, codes..., response, rank)


@dataclass(frozen=True)
class FoldedRows:
    width: int  # sources counted
    voters: tuple[int, ...]  # alpha's, by their place among the sources
    coded: Counter  # (criterion, codes) -> keys with that pattern
    # Units where the voters disagree, in the orders alpha sums them: over every key
    # (first voter, response, its place, criterion, met, unmet) and per criterion
    # (first voter, response, met, unmet). Each unit once: the sort keys are unique.
    overall: list
    by_criterion: dict[int, list]

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
        overall = []
        by_criterion: dict[int, list] = {}
        # Each row's codes tuple is made once (the pattern's key); its voters' MET and
        # UNMET tallied once per distinct codes (a few hundred among ~177,000 rows at
        # 100,000 responses): ``_entries`` per row, inlined.
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
                overall.append((first, rid, place, cid, *tally))
                found = by_criterion.get(cid)
                if found is None:
                    found = by_criterion[cid] = []
                found.append((first, rid, *tally))
        overall.sort()
        for found in by_criterion.values():
            found.sort()
        return cls(width, tuple(voters), coded, overall, by_criterion)

    def patched(self, changes: Mapping[Row, int], before: Mapping[Row, int]) -> FoldedRows:
        """After the rows' counts moved by ``changes`` from ``before`` (rows without their
        counts, as ``agreement_kept`` keeps them); a new object, this one unchanged."""
        coded = Counter(self.coded)
        overall = list(self.overall)
        by_criterion = {cid: list(found) for cid, found in self.by_criterion.items()}
        for row, n in changes.items():
            if not n:
                continue
            cid, codes = row[0], tuple(row[1:1 + self.width])
            coded[cid, codes] += n
            if row[-2] is None:
                continue
            was, now = before.get(row, 0) > 0, before.get(row, 0) + n > 0
            if was == now:
                continue
            whole, mine = _entries((*row, 1), self.width, self.voters)
            mine_list = by_criterion.setdefault(cid, [])
            if now:
                insort(overall, whole)
                insort(mine_list, mine)
            else:
                _remove(overall, whole)
                _remove(mine_list, mine)
        return FoldedRows(self.width, self.voters,
                          Counter({k: n for k, n in coded.items() if n}), overall,
                          by_criterion)


def _entries(row: Sequence, width: int, voters: Sequence[int]) -> tuple[tuple, tuple]:
    cid, codes, rid, rank = row[0], row[1:1 + width], row[-3], int(row[-2])
    cast = [codes[i] for i in voters]
    met, unmet = cast.count(1), cast.count(2)
    return (rank // RANK, rid, rank % RANK, cid, met, unmet), (rank // RANK, rid, met, unmet)


def _remove(ordered: list, entry: tuple) -> None:
    at = bisect_left(ordered, entry)
    if at == len(ordered) or ordered[at] != entry:
        raise ValueError(f"no unit {entry} to take out of the count")
    del ordered[at]
