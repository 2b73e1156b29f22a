"""One tuple per (response, criterion) key, shared by every dict keyed by it (issue 41).

The Agreement report keys a dozen dicts by (response, criterion): the verdicts and reasons
of people, of each run and panel, and of each reviewer. Each was built from rows of its
own, so at 100,000 responses with 5% reviewed it held ~480,000 key tuples (and as many
response ids as ints) for ~40,000 keys: ~35 MB of the app's resident memory. A pool hands
out the first tuple made for a key to everyone who builds that key after it.
"""

from __future__ import annotations

from collections.abc import Iterable


class KeyPool:
    __slots__ = ("_keys",)

    def __init__(self) -> None:
        self._keys: dict[tuple, tuple] = {}

    def __call__(self, response_id: int, criterion_id: int) -> tuple[int, int]:
        key = (response_id, criterion_id)
        return self._keys.setdefault(key, key)

    def seed(self, keys: Iterable[tuple]) -> None:
        """Keys made already (a dict's): handed out from now on."""
        found = self._keys
        for key in keys:
            found.setdefault(key, key)
