"""The human baseline's criterion rows kept by what they are computed from (issue 41).

A saved verdict is on one criterion, yet the baseline was computed anew for every criterion
after it: at 100,000 responses (5,000 reviewed, 8 criteria) 0.225 s of the Agreement page's
0.5 s target after a verdict, against 0.148 s with the other criteria's rows kept
(benchmarks/baseline_after_verdict.py, in turns). A
criterion's row (``human_baseline._criterion_baseline``) is a function of its inputs only:
the criterion, its reviewers, the responses resampled, each response's verdict pattern
group and the groups' verdicts, the judges, the draws' seed, and (data read whole) the
judges' verdicts outside the resampled responses or (data read for the reviewed responses
only) the report's Human pair of each judge on it, and with three reviewers or more their
verdicts on it in order (alpha's sums follow that order). ``RowMemo`` keeps rows by those
inputs, so only the criteria whose inputs moved are computed again: the same figures, as
the inputs are the same (tests/storage/test_baseline_rows.py).

Values are keyed by their type as well: a plain string "MET" equals ``Verdict.MET`` but the
baseline tells them apart (identity checks), so they must not share a row.
"""

from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence

from storage.services.baseline_patterns import ABSENT

_ABSENT = ("absent",)


def _typed(value) -> Hashable:
    return _ABSENT if value is ABSENT else (type(value), value)


def _digest(arrays: Sequence, values: Sequence) -> bytes:
    """One digest of the arrays (their type, shape and bytes) and of the values (pickled):
    a key holds 20 bytes, not the responses and verdicts it stands for (with three
    reviewers, each one's verdicts on the criterion: thousands at 100,000 responses)."""
    import numpy as np

    found = hashlib.blake2b(digest_size=20)
    for array in arrays:
        array = np.asarray(array)
        found.update(f"{array.dtype.str}{array.shape}".encode())
        found.update(np.ascontiguousarray(array).tobytes())
    try:
        found.update(pickle.dumps(values, protocol=5))
    except (pickle.PicklingError, AttributeError) as exc:  # a value that cannot be keyed
        raise TypeError(f"not a key: {exc}") from exc
    return found.digest()


def row_key(criterion, keys: tuple[str, ...], rids, groups, found: Sequence[tuple],
            judges: Sequence, seed: int, complete: bool, outside: Mapping, pairwise,
            human: str, reviewer_verdicts: Mapping) -> Hashable:
    """What a criterion's row is computed from, as one hashable key (``module docstring``);
    raises TypeError when a part cannot be hashed (the row is then computed, not kept).
    Values that are equal but pickle differently (two copies of a string) only make two
    keys for one row: a row computed again, never a row of other inputs."""
    cid = criterion.id
    judge_keys = tuple((s.key, s.label) for s in judges)
    if complete:
        beside = tuple(frozenset((_typed(v), n) for v, n in outside.get((s.key, cid), {}).items())
                       for s in judges)
    else:
        beside = tuple(pairwise[human, s.key].per_criterion.get(cid) for s in judges)
    voters = (() if len(keys) <= 2 else
              tuple(tuple((rid, _typed(v)) for (rid, c), v in reviewer_verdicts[k].items()
                          if c == cid) for k in keys))
    typed = tuple(tuple(_typed(v) for v in row) for row in found)
    key = (criterion, keys, judge_keys, seed, complete, beside,
           _digest((rids, groups), (typed, voters)))
    hash(key)
    return key


class RowMemo:
    """The last ``size`` rows computed, by their inputs' key; shared by every thread."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self.made = 0  # rows computed (not found kept)
        self._rows: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def row(self, key: Hashable, make: Callable):
        """The row kept for ``key``, else ``make()``'s, kept."""
        with self._lock:
            if key in self._rows:
                self._rows.move_to_end(key)
                return self._rows[key]
        found = make()
        with self._lock:
            self.made += 1
            self._rows[key] = found
            while len(self._rows) > self.size:
                self._rows.popitem(last=False)
        return found


# the app's (ui.agreement_readers.get_baseline): every set's rows, by their inputs
ROWS = RowMemo()
