"""People's units of the kept Agreement count packed per response
(storage.services.unit_pack): read back row for row, in order, None kept; replaced as a
dict's pop and set; a fraction of the Counters' memory."""

from __future__ import annotations

import tracemalloc
from collections import Counter

import pytest

from storage.services.unit_pack import PackedUnits, pack, unpack

WIDTH = 7  # criterion, people's code, three judges' codes, response, rank


def _share(rid: int, rows: int = 16) -> Counter:
    share: Counter = Counter()
    for i in range(rows):
        disagree = i % 3 == 0
        share[(i % 8 + 1, None if i % 2 else 1, 2, None, 1 + i % 2,
               rid if disagree else None, 7 * 1000 + i if disagree else None)] = (
            -1 if i % 4 == 1 else 1 + i)
    return share


def test_a_share_reads_back_row_for_row_in_its_order():
    share = _share(100_003)
    back = unpack(pack(share, WIDTH), WIDTH)

    assert back == share and list(back.items()) == list(share.items())
    assert any(None in row for row in back) and min(back.values()) == -1
    with pytest.raises(ValueError, match="a row of 3 values among rows of 7"):
        pack(Counter({(1, 2, 3): 1}), WIDTH)


def test_the_packed_units_are_the_dict_they_stand_for_and_replace_as_it_does():
    units = {rid: _share(rid, 4 + rid % 5) for rid in (30, 10, 20)}
    packed = PackedUnits.of(units, WIDTH)
    assert packed == units and list(packed) == [30, 10, 20]
    assert packed.get(99) is None and packed.get(99, Counter()) == Counter()

    fresh = {10: _share(10, 2), 40: _share(40, 3)}
    moved = packed.replaced([10, 30, 55], fresh)
    expected = dict(units)
    for rid in (10, 30):
        expected.pop(rid)
    expected.update(fresh)
    assert moved == expected and list(moved) == [20, 10, 40]
    assert packed == units  # the one replaced is unchanged


def test_packed_they_hold_a_fraction_of_the_counters_memory():
    def held(make) -> int:
        tracemalloc.start()
        made = make()
        size = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del made
        return size

    ids = range(100_000, 105_000)  # 5,000 reviewed responses of 100,000
    counters = held(lambda: {rid: _share(rid) for rid in ids})
    packed = held(lambda: PackedUnits.of({rid: _share(rid) for rid in ids}, WIDTH))
    assert packed < 0.5 * counters, (packed, counters)  # 5.2 MB against 11.3
