"""Where each (response, criterion, reviewer) of an import was first seen, in compact memory.

A verdict sheet may set each reviewer's verdict on a response and criterion once; the second
row is refused with the first one's location. A dict of tuples to strings costs ~250 bytes a
row; here each reviewer starts with a dict of small ints and switches to a flat array of
``responses x criteria`` slots once that is smaller, so memory is at most
min(~100 bytes x rows, 8 bytes x slots) per reviewer, and a dense sheet stays flat in rows.
"""

from __future__ import annotations

import re
from array import array

_WHERE = re.compile(r"row (\d+) \(line (\d+)\)")
_SHIFT = 32
_SOMEWHERE = 1 << 62  # a location that is not "row N (line M)"


class FirstSeen:
    def __init__(self, response_ids: list[int], criterion_ids: list[int]):
        self._response = {rid: i for i, rid in enumerate(sorted(set(response_ids)))}
        self._criterion = {cid: i for i, cid in enumerate(criterion_ids)}
        self._slots = max(1, len(self._response) * len(self._criterion))
        # An array of 8-byte slots is smaller than a dict beyond slots/12 entries.
        self._dense_at = max(64, self._slots // 12)
        self._by_reviewer: dict[str, dict[int, int] | array] = {}

    def first(self, response_id: int, criterion_id: int, reviewer: str,
              where: str) -> str | None:
        """Where this key was seen before (None: first time; it is remembered at ``where``)."""
        slot = self._response[response_id] * len(self._criterion) + self._criterion[criterion_id]
        seen = self._by_reviewer.setdefault(reviewer, {})
        before = seen.get(slot, 0) if isinstance(seen, dict) else seen[slot]
        if before == _SOMEWHERE:
            return "an earlier row"
        if before:
            row, line = before & ((1 << _SHIFT) - 1), before >> _SHIFT
            return f"row {row} (line {line})" if line else f"row {row}"
        seen[slot] = _pack(where)
        if isinstance(seen, dict) and len(seen) > self._dense_at:
            dense = array("Q", bytes(8 * self._slots))
            for key, value in seen.items():
                dense[key] = value
            self._by_reviewer[reviewer] = dense
        return None


def _pack(where: str) -> int:
    found = _WHERE.search(where)
    if not found:
        return _SOMEWHERE
    return int(found[1]) | (int(found[2]) << _SHIFT)
