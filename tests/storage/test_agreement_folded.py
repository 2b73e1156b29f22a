"""The pattern rows folded as the Agreement report sums them (storage.services
.agreement_folded): patched by a few rows' counts, they are the rows folded anew."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from storage.services.agreement_folded import FoldedRows
from storage.services.agreement_sides import RANK


def _rows(rng: random.Random, width: int, units: int) -> Counter:
    """Pattern rows as a count keeps them: grouped patterns, and one row per unit where the
    voters disagree (its response and rank)."""
    rows: Counter = Counter()
    for rid in range(units):
        for cid in (3, 5, 8):
            codes = tuple(rng.choice([None, 1, 2, 3]) for _ in range(width))
            if 1 in codes and 2 in codes:
                first = next(i for i, c in enumerate(codes) if c is not None)
                rows[(cid, *codes, rid, first * RANK + cid)] += 1
            else:
                rows[(cid, *codes, None, None)] += 1
    return rows


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_patched_rows_are_the_rows_folded_anew(seed):
    rng = random.Random(seed)
    width, voters = 4, (0, 1, 2)
    before = _rows(rng, width, 60)
    after = Counter(before)
    for row in rng.sample(sorted(before, key=repr), 25):
        after[row] -= 1  # units gone (disagreeing ones among them) ...
    after.update(_rows(rng, width, 5))  # ... and others come
    change = Counter(after)
    change.subtract(before)
    after = Counter({row: n for row, n in after.items() if n})

    folded = FoldedRows.of(((*r, n) for r, n in before.items()), width, voters)
    patched = folded.patched(change, before)

    assert patched == FoldedRows.of(((*r, n) for r, n in after.items()), width, voters)
    assert patched.overall != folded.overall  # disagreeing units moved
    assert folded == FoldedRows.of(((*r, n) for r, n in before.items()), width, voters)
