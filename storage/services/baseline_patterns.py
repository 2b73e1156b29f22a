"""The human baseline's verdict patterns: each verdict map (keyed (response, criterion)) read
once into arrays, and per criterion the responses grouped by what every source said of them
(``Resampler.grouped`` resamples the groups; docs/design/scale.md, "The baseline by verdict
patterns")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

from grading.types import Verdict

ABSENT = object()  # no verdict from that source (a None verdict is kept as it was)
_FAST = (Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS, None)


@dataclass(frozen=True)
class Coded:
    """One verdict map as arrays: response ids, criterion ids, value codes."""

    rids: object
    cids: object
    codes: object


class Codes:
    """One value table for the maps of a baseline (code 0 is ``ABSENT``). A value is known by
    its type and itself, so that a string never stands for the verdict it spells."""

    def __init__(self):
        self.values: list = [ABSENT, *_FAST]
        self._fast = {value: code for code, value in enumerate(self.values) if code}
        self._typed = {(type(v), v): code for v, code in self._fast.items()}

    def encode(self, verdicts: Mapping) -> Coded:
        import numpy as np

        n = len(verdicts)
        keys = np.fromiter(chain.from_iterable(verdicts), dtype=np.int64, count=2 * n)
        values = verdicts.values()
        if set(map(type, values)) <= {Verdict, type(None)}:
            codes = np.fromiter(map(self._fast.__getitem__, values), dtype=np.int64, count=n)
        else:
            codes = np.fromiter((self._code(v) for v in values), dtype=np.int64, count=n)
        return Coded(keys[0::2], keys[1::2], codes)

    def _code(self, value) -> int:
        key = (type(value), value)
        if key not in self._typed:
            self._typed[key] = len(self.values)
            self.values.append(value)
        return self._typed[key]


def responses(maps: Sequence[Coded], criterion_id: int):
    """The sorted responses with a key of ``criterion_id`` in any of ``maps``."""
    import numpy as np

    return np.unique(np.concatenate(
        [c.rids[c.cids == criterion_id] for c in maps] or [np.zeros(0, dtype=np.int64)]))


def patterns(codes: Codes, sources: Sequence[Coded], criterion_id: int, rids):
    """Per response of ``rids`` (sorted) its group, and per group the values of each source
    (``ABSENT`` where it has none) as a tuple: responses with the same values are a group."""
    import numpy as np

    found = np.zeros((len(rids), len(sources)), dtype=np.int64)
    for column, source in enumerate(sources):
        chosen = np.flatnonzero(source.cids == criterion_id)
        wanted = source.rids[chosen]
        at = np.searchsorted(rids, wanted)
        inside = at < len(rids)
        inside[inside] = rids[at[inside]] == wanted[inside]
        found[at[inside], column] = source.codes[chosen[inside]]
    if not len(rids):
        return np.zeros(0, dtype=np.int64), []
    rows, groups = unique_rows(found)
    values = codes.values
    return groups, [tuple(values[c] for c in row) for row in rows.tolist()]


def unique_rows(found):
    """``np.unique(found, axis=0, return_inverse=True)`` of a small non-negative integer
    matrix, each row read as one number when they fit in 63 bits (10x faster)."""
    import numpy as np

    base = int(found.max(initial=0)) + 1
    if base ** found.shape[1] >= 2 ** 62:
        rows, groups = np.unique(found, axis=0, return_inverse=True)
        return rows, groups.ravel()
    scale = base ** np.arange(found.shape[1] - 1, -1, -1, dtype=np.int64)
    _numbers, first, groups = np.unique(found @ scale, return_index=True, return_inverse=True)
    return found[first], groups.ravel()


def against(codes: Codes, a: Coded, b: Coded, keep=None):
    """A's keys (those ``keep`` marks, all if None) against B: per key of A, A's and B's
    codes (``0`` where B has none), and B's codes on the keys A lacks."""
    import numpy as np

    if keep is not None:
        a = Coded(a.rids[keep], a.cids[keep], a.codes[keep])
    span = int(max(a.cids.max(initial=0), b.cids.max(initial=0))) + 1
    key_a, key_b = a.rids * span + a.cids, b.rids * span + b.cids
    order = np.argsort(key_b)
    sorted_b = key_b[order]
    at = np.searchsorted(sorted_b, key_a)
    inside = at < len(sorted_b)
    inside[inside] = sorted_b[at[inside]] == key_a[inside]
    b_at_a = np.zeros(len(key_a), dtype=np.int64)
    b_at_a[inside] = b.codes[order[at[inside]]]
    b_only = np.ones(len(key_b), dtype=bool)
    b_only[order[at[inside]]] = False
    return a, b_at_a, b.codes[b_only]


def pair_counts(codes: Codes, first, second, second_alone) -> dict:
    """``compare_counts``' input: (A's value, B's value) -> keys, None for no verdict (a None
    verdict is no verdict, as ``compare_verdicts`` drops it)."""
    import numpy as np

    none = codes.values.index(None)
    base = len(codes.values)
    first = np.where(first == none, 0, first)
    second = np.where(second == none, 0, second)
    alone = second_alone[second_alone != none]
    pairs, counts = np.unique(np.concatenate([first * base + second, alone]),
                              return_counts=True)
    values = [None if v is ABSENT else v for v in codes.values]
    return {(values[p // base], values[p % base]): n
            for p, n in zip(pairs.tolist(), counts.tolist(), strict=True) if p}


def reviewer_cells(codes: Codes, mine: Coded, final: Coded, keep):
    """Per response of the reviewer's kept keys (sorted), the confusion cells of their
    verdicts (A) against the verdict in force (B), their criteria summed; and the pair
    counts of the verdict in force (A) against theirs (``compare_counts``' input)."""
    import numpy as np

    kept, final_at, _ = against(codes, mine, final, keep)
    met, unmet = codes.values.index(Verdict.MET), codes.values.index(Verdict.UNMET)
    index = {met: 0, unmet: 1}
    a = np.full(len(kept.codes), -1)
    b = np.full(len(kept.codes), -1)
    for code, bit in index.items():
        a[kept.codes == code] = bit
        b[final_at == code] = bit
    rids, row = np.unique(kept.rids, return_inverse=True)
    both = (a >= 0) & (b >= 0)
    cells = np.bincount(row[both] * 4 + a[both] * 2 + b[both],
                        minlength=len(rids) * 4).reshape(-1, 4)
    final_keys, mine_at, mine_alone = against(codes, final, kept)
    return cells, pair_counts(codes, final_keys.codes, mine_at, mine_alone)
