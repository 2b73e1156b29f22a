"""The pattern rows folded as the Agreement report sums them (storage.services
.agreement_folded): patched by a few rows' counts, they are the rows folded anew."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from storage.services.agreement_folded import FoldedRows
from storage.services.agreement_sides import RANK


def _rows(rng: random.Random, width: int, units: int, first: int = 0) -> Counter:
    """Pattern rows as a count keeps them: grouped patterns, and one row per unit where the
    voters disagree (its response, from ``first`` on, and rank)."""
    rows: Counter = Counter()
    for rid in range(first, first + units):
        for cid in (3, 5, 8):
            codes = tuple(rng.choice([None, 1, 2, 3]) for _ in range(width))
            if 1 in codes and 2 in codes:
                first = next(i for i, c in enumerate(codes) if c is not None)
                rows[(cid, *codes, rid, first * RANK + cid)] += 1
            else:
                rows[(cid, *codes, None, None)] += 1
    return rows


@pytest.mark.parametrize("given", [True, False], ids=["counts-given", "counts-looked-up"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_patched_rows_are_the_rows_folded_anew(seed, given):
    rng = random.Random(seed)
    width, voters = 4, (0, 1, 2)
    before = _rows(rng, width, 60)
    after = Counter(before)
    for row in rng.sample(sorted(before, key=repr), 25):
        after[row] -= 1  # units gone (disagreeing ones among them) ...
    # ... and others come (looked up: of responses not counted yet, as a unit's row is
    # one response's, counted once: given, the counts may say 2)
    after.update(_rows(rng, width, 5, 0 if given else 60))
    change = Counter(after)
    change.subtract(before)
    after = Counter({row: n for row, n in after.items() if n})

    folded = FoldedRows.of(((*r, n) for r, n in before.items()), width, voters)
    patched = folded.patched(change, before if given else None)

    assert patched == FoldedRows.of(((*r, n) for r, n in after.items()), width, voters)
    assert patched.overall != folded.overall  # disagreeing units moved
    assert folded == FoldedRows.of(((*r, n) for r, n in before.items()), width, voters)


def _naive_merged(units: list[tuple], gone: list[tuple], came: list[tuple]) -> list[tuple]:
    left = list(units)
    for row in gone:
        left.remove(row)  # ValueError when it is not there
    return sorted(left + came)


@pytest.mark.parametrize("seed", range(6))
def test_units_looked_up_and_merged_are_the_units_sorted_anew(seed):
    # The units are looked up in the sorted array (agreement_folded._ranges), not sorted
    # again with the rows: the tally of each row and the merged array are those of a sorted
    # list, with equal units, rows before the first unit and after the last, rows that go
    # and come at once, and first voters with many responses each.
    import numpy as np

    from storage.services.agreement_folded import _merged, _tally

    rng = random.Random(seed)

    def unit() -> tuple:
        return (rng.randrange(3), rng.randrange(40), rng.randrange(4), rng.choice([3, 5]),
                rng.randrange(3), rng.randrange(3))

    units = sorted(unit() for _ in range(rng.randrange(0, 300)))
    units += [units[-1]] * 2 if units else []  # equal units
    array = np.array(units, dtype=np.int64).reshape(-1, 6)
    asked = [unit() for _ in range(30)] + units[:3] + units[-3:] + [(-1,) * 6, (9,) * 6]
    tally = _tally(array, np.array(asked, dtype=np.int64))
    assert tally.tolist() == [units.count(row) for row in asked]

    gone = rng.sample(units, min(len(units), rng.randrange(0, 20)))
    came = [unit() for _ in range(rng.randrange(0, 20))] + gone[:2] + [(-1,) * 6, (9,) * 6]
    merged = _merged(array, gone, came)
    assert [tuple(row) for row in merged.tolist()] == _naive_merged(units, gone, came)
    assert array.tolist() == [list(row) for row in units]  # the kept array is unchanged


def test_a_unit_to_take_out_that_is_not_there_is_an_error():
    import numpy as np

    from storage.services.agreement_folded import _merged

    units = np.array([(0, 1, 0, 3, 1, 1), (0, 2, 0, 3, 1, 1)], dtype=np.int64)
    with pytest.raises(ValueError, match="no unit"):
        _merged(units, [(0, 1, 0, 3, 1, 1), (0, 1, 0, 3, 1, 1)], [])  # one of two is there
    with pytest.raises(ValueError, match="no unit"):
        _merged(units, [(0, 3, 0, 3, 1, 1)], [(0, 0, 0, 3, 1, 1)])
