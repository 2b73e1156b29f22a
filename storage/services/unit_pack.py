"""People's share of the kept Agreement count, per reviewed response, packed (issue 41).

``agreement_kept`` keeps, per reviewed response, its rows of the count (criterion, codes,
response, rank) with their counts, to take them out when the response moves. As Counters
of row tuples that was ~18 MB of the app's resident memory at 100,000 responses (5,000
reviewed, ~16 rows each); packed into one int64 array per response (each row's values,
None as a sentinel, then its count), ~6 MB. Read back row for row, in the same order.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

_NONE = -(2**63)  # stands for None: no row value is this int


def pack(share: Mapping[tuple, int], width: int) -> array:
    values: list = []
    for row, n in share.items():
        if len(row) != width:
            raise ValueError(f"a row of {len(row)} values among rows of {width}")
        values += row
        values.append(n)
    # None swapped for its sentinel in one pass over the flat list (a generator per row
    # was 0.18 s of a new process's first Agreement report at 100,000: 5,000 shares)
    return array("q", [_NONE if value is None else value for value in values])


def unpack(packed: array, width: int) -> Counter:
    share: Counter = Counter()
    step = width + 1
    for at in range(0, len(packed), step):
        row = packed[at:at + width]
        share[tuple(None if value == _NONE else value for value in row)] = packed[at + width]
    return share


class PackedUnits(Mapping):
    """Reviewed response -> its share (a Counter of rows, unpacked when asked for), in the
    order the shares were given. Never mutated: ``replaced`` makes a new one."""

    __slots__ = ("_packed", "_width")

    def __init__(self, packed: dict[int, array], width: int) -> None:
        self._packed, self._width = packed, width

    @classmethod
    def of(cls, units: Mapping[int, Mapping[tuple, int]], width: int) -> PackedUnits:
        return cls({rid: pack(share, width) for rid, share in units.items()}, width)

    def replaced(self, gone: Iterable[int],
                 fresh: Mapping[int, Mapping[tuple, int]]) -> PackedUnits:
        """Without the ``gone`` responses' shares, with ``fresh``'s put last (as a dict's
        pop and set)."""
        packed = dict(self._packed)
        for rid in gone:
            packed.pop(rid, None)
        for rid, share in fresh.items():
            packed[rid] = pack(share, self._width)
        return PackedUnits(packed, self._width)

    def __getitem__(self, rid: int) -> Counter:
        return unpack(self._packed[rid], self._width)

    def __iter__(self) -> Iterator[int]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)

    __hash__ = None  # type: ignore[assignment]
