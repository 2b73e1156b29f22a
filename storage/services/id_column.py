"""A mapping keyed by response ids held as one sorted array (issue 41): the shared part of
the columns that replaced dicts of every response (``score_column.ScoreColumn``,
``label_column.LabelColumn``, the trust frame's ``Positions``). A key is found by binary
search (``rows_of`` places a whole array of ids at once); a key that is not an int (or is
a bool) is not there."""

from __future__ import annotations

from collections.abc import Iterator, Mapping


class IdColumn(Mapping):
    """Response id -> the value of its place in ``_ids`` (ascending, distinct int64), which
    a subclass gives (``_value``)."""

    __slots__ = ("_ids",)

    def _value(self, i: int):
        raise NotImplementedError

    def _check_ascending(self, what: str) -> None:
        """ValueError unless the ids are ascending and distinct."""
        if len(self._ids) > 1 and not bool((self._ids[1:] > self._ids[:-1]).all()):
            raise ValueError(f"a {what}'s ids must be ascending and distinct")

    def _at(self, rid) -> int:
        if not isinstance(rid, int) or isinstance(rid, bool):
            return -1
        i = int(self._ids.searchsorted(rid))
        return i if i < len(self._ids) and int(self._ids[i]) == rid else -1

    def rows_of(self, rids):
        """The places of the ids ``rids`` (an int64 array) in ``_ids``, -1 where an id is not
        here: a whole column of ids placed at once, not a binary search per key."""
        import numpy as np

        if not len(self._ids):
            return np.full(len(rids), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._ids, rids), len(self._ids) - 1)
        return np.where(self._ids[at] == rids, at, -1).astype(np.int64)

    def __getitem__(self, rid):
        i = self._at(rid)
        if i < 0:
            raise KeyError(rid)
        return self._value(i)

    def __contains__(self, rid) -> bool:
        return self._at(rid) >= 0

    def get(self, rid, default=None):
        i = self._at(rid)
        return default if i < 0 else self._value(i)

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids.tolist())

    def __len__(self) -> int:
        return len(self._ids)

    def keys(self) -> list[int]:  # type: ignore[override]
        return self._ids.tolist()

    __hash__ = None  # type: ignore[assignment]
