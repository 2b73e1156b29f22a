"""The judges' pattern rows (agreement_judge_counts.JudgePatterns.rows) as one value of raw
numbers, and back, row for row in their order (issue 41: kept in the database,
agreement_judge_store).

A row is ``((criterion, None, code..., response, rank), n)``: a code per judge (None, 1 MET,
2 UNMET, 3 CANNOT_ASSESS), the response and rank of a unit where alpha's voters disagree
(else None) and how many keys had the pattern. The value holds, after a header of the row
count and the judges' count, each column whole (little-endian): criteria (int64), codes
(one byte each, 0 for None), responses, ranks (int64), which of the two are present (one
byte: 1 response, 2 rank) and the counts (int64). 177,000 rows at 100,000 responses are
read back in a few tens of milliseconds instead of ~0.5 s row by row.
"""

from __future__ import annotations

from collections.abc import Sequence

_HEADER = 16  # row count, judges' count: two int64
_CODES = (None, 1, 2, 3)


class UnknownRows(ValueError):
    """A value this code did not write (another shape or length): counted again."""


def encode(rows: Sequence[tuple[tuple, int]], width: int) -> bytes:
    """The rows (each with ``width`` judges' codes) as one value; ValueError for a row
    that is not a judges' pattern row of that width."""
    import numpy as np

    count = len(rows)
    criteria = np.empty(count, dtype="<i8")
    codes = np.zeros((count, width), dtype=np.uint8)
    responses = np.zeros(count, dtype="<i8")
    ranks = np.zeros(count, dtype="<i8")
    present = np.zeros(count, dtype=np.uint8)
    ns = np.empty(count, dtype="<i8")
    code_of = {code: i for i, code in enumerate(_CODES)}
    for i, (row, n) in enumerate(rows):
        if len(row) != width + 4 or row[1] is not None:
            raise ValueError(f"not a judges' pattern row of {width} judges: {row!r}")
        criteria[i], ns[i] = row[0], n
        codes[i] = [code_of[code] for code in row[2:-2]]
        if row[-2] is not None:
            responses[i] = row[-2]
            present[i] |= 1
        if row[-1] is not None:
            ranks[i] = row[-1]
            present[i] |= 2
    header = np.array([count, width], dtype="<i8")
    return b"".join(a.tobytes() for a in (header, criteria, codes, responses, ranks,
                                          present, ns))


def decode(blob: bytes, width: int) -> tuple[tuple[tuple, int], ...]:
    """The rows ``encode`` wrote, equal to them and in their order; ``UnknownRows`` when the
    value is not of ``width`` judges or not whole."""
    import numpy as np

    if len(blob) < _HEADER:
        raise UnknownRows("no header")
    count, stored_width = (int(v) for v in np.frombuffer(blob, dtype="<i8", count=2))
    if stored_width != width or len(blob) != _HEADER + count * (8 * 4 + 1 + width):
        raise UnknownRows(f"{len(blob)} bytes are not {count} rows of {width} judges")
    at = _HEADER

    def column(dtype: str, items: int):
        nonlocal at
        found = np.frombuffer(blob, dtype=dtype, count=items, offset=at)
        at += found.nbytes
        return found

    criteria = column("<i8", count)
    codes = column("u1", count * width).reshape(count, width)
    responses, ranks = column("<i8", count), column("<i8", count)
    present, ns = column("u1", count), column("<i8", count)
    if count == 0:
        return ()
    if codes.size and int(codes.max()) >= len(_CODES):
        raise UnknownRows("a code this code does not know")
    # Each distinct (criterion, codes) made into a tuple once (a few hundred), then each
    # row is that tuple and its unit (one tuple for the rows without one).
    key = codes.astype("<i8") @ (4 ** np.arange(width, dtype="<i8")) if width <= 24 else None
    if key is not None and int(criteria.min()) >= 0 and int(criteria.max()) < 2 ** 14:
        key = key + criteria * 4 ** width  # a (criterion, codes) pair as one number
        _unique, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    else:
        pattern = np.concatenate([criteria[:, None], codes.astype("<i8")], axis=1)
        _unique, first, inverse = np.unique(pattern, axis=0, return_index=True,
                                            return_inverse=True)
    heads = [(int(criteria[i]), None, *(_CODES[c] for c in codes[i].tolist()))
             for i in first.tolist()]
    bare = [(*head, None, None) for head in heads]
    return tuple(
        (heads[h] + (rid, rank) if has == 3 else bare[h] if not has
         else heads[h] + ((rid if has & 1 else None), (rank if has & 2 else None)), n)
        for h, rid, rank, has, n in zip(inverse.reshape(-1).tolist(), responses.tolist(),
                                        ranks.tolist(), present.tolist(), ns.tolist(), strict=True))
