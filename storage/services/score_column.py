"""A judge's scores per response as two arrays, read as a mapping (issue 41).

The Agreement report held each judge's score of every response as a dict: at 100,000
responses x 3 runs and a panel, 400,000 entries (~40 MB of Python objects) read back row by
row. ``ScoreColumn`` is the same mapping (response id -> score, in response order) over a
sorted array of ids and one of scores: equal to the dict it replaces (``Mapping.__eq__``),
its values the very floats.
"""

from __future__ import annotations

from collections.abc import Iterable

from storage.services.id_column import IdColumn


class ScoreColumn(IdColumn):
    """Response id -> score, ids ascending (the order the dicts were read in)."""

    __slots__ = ("_scores",)

    def __init__(self, ids, scores) -> None:
        import numpy as np

        self._ids = np.ascontiguousarray(ids, dtype=np.int64)
        self._scores = np.ascontiguousarray(scores, dtype=np.float64)
        if self._ids.shape != self._scores.shape or self._ids.ndim != 1:
            raise ValueError("a score column needs as many scores as ids")
        self._check_ascending("score column")

    @property
    def ids(self):
        return self._ids

    @property
    def scores(self):
        return self._scores

    def _value(self, i: int) -> float:
        return float(self._scores[i])

    # whole columns at once (not one lookup per key): what the report and trust read
    def values(self) -> list[float]:  # type: ignore[override]
        return self._scores.tolist()

    def items(self) -> list[tuple[int, float]]:  # type: ignore[override]
        return list(zip(self._ids.tolist(), self._scores.tolist(), strict=True))

    def all_finite(self) -> bool:
        """Whether every score is a finite number (what a comparison checks of each)."""
        import numpy as np

        return bool(np.isfinite(self._scores).all())

    def of(self, rids: Iterable[int]) -> dict[int, float]:
        """The scores of those of ``rids`` (ints) that are here, in ``rids``' order, placed
        in one pass (``rows_of``)."""
        import numpy as np

        wanted = np.fromiter(rids, dtype=np.int64)
        at = self.rows_of(wanted)
        found = at >= 0
        return dict(zip(wanted[found].tolist(), self._scores[at[found]].tolist(),
                        strict=True))

    def without(self, responses: Iterable[int]) -> ScoreColumn:
        """These scores less the ``responses``' (itself when none of them is here)."""
        import numpy as np

        gone = np.fromiter(responses, dtype=np.int64)
        if not len(gone):
            return self
        keep = ~np.isin(self._ids, gone)
        return self if bool(keep.all()) else ScoreColumn(self._ids[keep], self._scores[keep])

    def __eq__(self, other) -> bool:
        if isinstance(other, ScoreColumn):
            return (len(self) == len(other) and bool((self._ids == other._ids).all())
                    and self.values() == other.values())
        return super().__eq__(other)

    def __repr__(self) -> str:
        return f"ScoreColumn({len(self)} scores)"

    def __reduce__(self):
        return ScoreColumn, (self._ids, self._scores)
