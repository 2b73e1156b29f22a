"""The responses' labels as two arrays and one string, read as a mapping (issue 41).

The Agreement report holds every response's label (its external id, or "#<id>"): at 100,000
responses a dict of 100,000 ints and strings, ~13.5 MB of Python objects kept in the app's
process as long as the report is, and made again with each report. ``LabelColumn`` is the
same mapping (response id -> label, in response order) over a sorted array of ids, the
labels joined in one string and each one's end in it: ~2 MB. Equal to the dict it replaces
(``Mapping.__eq__``), its labels the same strings; as ``score_column.ScoreColumn`` for the
judges' scores.
"""

from __future__ import annotations

from collections.abc import Iterable

from storage.services.id_column import IdColumn


class LabelColumn(IdColumn):
    """Response id -> label, ids ascending (the order the labels are read in)."""

    __slots__ = ("_ends", "_text")

    def __init__(self, ids: Iterable[int], labels: Iterable[str]) -> None:
        import numpy as np

        labels = list(labels)
        if not all(isinstance(label, str) for label in labels):
            raise TypeError("a label column holds strings")
        self._ids = (np.ascontiguousarray(ids, dtype=np.int64) if hasattr(ids, "dtype")
                     else np.fromiter(ids, dtype=np.int64))
        if len(self._ids) != len(labels):
            raise ValueError("a label column needs as many labels as ids")
        self._check_ascending("label column")
        self._ends = np.cumsum(np.fromiter(map(len, labels), dtype=np.int64,
                                           count=len(labels)))
        self._text = "".join(labels)

    @classmethod
    def _joined(cls, ids, ends, text: str) -> LabelColumn:
        made = cls.__new__(cls)
        made._ids, made._ends, made._text = ids, ends, text
        return made

    def _label(self, i: int) -> str:
        return self._text[(int(self._ends[i - 1]) if i else 0):int(self._ends[i])]

    _value = _label

    # whole columns at once (not one lookup per key)
    def values(self) -> list[str]:  # type: ignore[override]
        text, start, found = self._text, 0, []
        for end in self._ends.tolist():
            found.append(text[start:end])
            start = end
        return found

    def items(self) -> list[tuple[int, str]]:  # type: ignore[override]
        return list(zip(self._ids.tolist(), self.values(), strict=True))

    def __eq__(self, other) -> bool:
        if isinstance(other, LabelColumn):
            return (self._text == other._text and len(self) == len(other)
                    and bool((self._ids == other._ids).all())
                    and bool((self._ends == other._ends).all()))
        return super().__eq__(other)

    def __repr__(self) -> str:
        return f"LabelColumn({len(self)} labels)"

    def __reduce__(self):
        return LabelColumn._joined, (self._ids, self._ends, self._text)
