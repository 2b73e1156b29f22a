"""A reviewer's queue as a sequence whose items are built when read.

At 100,000 responses the queue's order is one list of response ids, put together from the
judges' facts (sets of ids), the reviewers' counts (only the reviewed responses) and the
sample's ranks in one pass, without a sort; a ``QueueItem`` (and its external id, read by
primary key) is made only for the positions the page shows, not for every response.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import overload

from storage.id_chunks import id_chunks


@dataclass(frozen=True)
class QueueItem:
    response_id: int
    external_id: str | None
    disagree: bool
    failed: bool
    reviewed_count: int  # criteria the reviewer asking has answered
    criteria_count: int
    reviewers: int = 0  # complete reviews by anyone
    needs_review: bool = True  # in this reviewer's queue: still needs them
    in_sample: bool = False

    @property
    def fully_reviewed(self) -> bool:
        return self.criteria_count > 0 and self.reviewed_count >= self.criteria_count


@dataclass(frozen=True)
class Standing:
    """Where one response stands for the reviewer asking: the criteria they answered (or,
    for the set's queue, the most anyone answered), the complete reviews, still needed."""

    mine: int
    complete: int
    needs: bool


def standing(per: Mapping[str, int], criteria_count: int, need: int,
             reviewer_key: str | None) -> Standing:
    """``per``: each reviewer stream's number of answered criteria of the response."""
    complete = sum(1 for n in per.values() if criteria_count and n >= criteria_count)
    if reviewer_key is None:
        mine = max(per.values(), default=0) if complete < need else criteria_count
        return Standing(mine, complete, complete < need)
    mine = per.get(reviewer_key, 0)
    done = criteria_count > 0 and mine >= criteria_count
    return Standing(mine, complete, not done and (mine > 0 or complete < need))


def queue_order(ids: Sequence[int], *, needs: Mapping[int, bool], default_needs: bool,
                disagree: frozenset[int] | set[int], failed: frozenset[int] | set[int],
                sample: Sequence[int], unreviewed_only: bool) -> list[int]:
    """The queue's order: still needed, judges disagree, a judge failed (each true first),
    then the sample's rank, then the id. ``ids`` ascending; ``needs`` only where it is not
    ``default_needs`` (the responses somebody reviewed). Eight buckets filled in one pass:
    the sample first, in its order, then the rest in id order; no sort."""
    buckets: list[list[int]] = [[] for _ in range(8)]
    ranked = set(sample)  # drawn from ``ids``
    for rid in sample:
        buckets[(not needs.get(rid, default_needs)) << 2 | (rid not in disagree) << 1
                | (rid not in failed)].append(rid)
    for rid in ids:
        if rid not in ranked:
            buckets[(not needs.get(rid, default_needs)) << 2 | (rid not in disagree) << 1
                    | (rid not in failed)].append(rid)
    return list(chain.from_iterable(buckets[:4] if unreviewed_only else buckets))


class _IdSet:
    """Membership of a set of response ids, held as one sorted array of machine integers."""

    __slots__ = ("_ids",)

    def __init__(self, ids) -> None:
        self._ids = array("q", sorted(ids))

    def __contains__(self, rid) -> bool:
        i = bisect_left(self._ids, rid)
        return i < len(self._ids) and self._ids[i] == rid

    def __len__(self) -> int:
        return len(self._ids)


class ReviewQueue(Sequence[QueueItem]):
    """The queue in order (``response_ids``); ``queue[i]`` builds that item, iterating builds
    them a chunk at a time. Immutable; ``external_of`` reads the external ids of a few
    responses (the page's one or two, or a chunk)."""

    def __init__(self, order: Sequence[int], *, criteria_count: int, need: int,
                 reviewer_key: str | None, counts: Mapping[int, Mapping[str, int]],
                 disagree: frozenset[int], failed: frozenset[int], sample: Sequence[int],
                 external_of: Callable[[Sequence[int]], Mapping[int, str | None]]) -> None:
        # ids held as machine integers, not Python objects: a queue of 100,000 responses
        # held ~11 MB as a tuple and sets (one per reviewer's queue kept, ten minutes)
        self._order = array("q", order)
        self._criteria_count = criteria_count
        self._need = need
        self._reviewer_key = reviewer_key
        self._counts = counts
        self._disagree = _IdSet(disagree)
        self._failed = _IdSet(failed)
        self._rank = _IdSet(sample)
        self._external_of = external_of

    @property
    def response_ids(self) -> tuple[int, ...]:
        """The queue's ids, in order (made on each call: ``id_at`` for one)."""
        return tuple(self._order)

    def id_at(self, index: int) -> int:
        return self._order[index]

    def position_of(self, response_id: int) -> int | None:
        try:
            return self._order.index(response_id)
        except (ValueError, TypeError, OverflowError):
            return None

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> QueueItem: ...

    @overload
    def __getitem__(self, index: slice) -> list[QueueItem]: ...

    def __getitem__(self, index: int | slice) -> QueueItem | list[QueueItem]:
        if isinstance(index, slice):
            return self._items(self._order[index].tolist())
        return self._items([self._order[index]])[0]

    def __iter__(self) -> Iterator[QueueItem]:
        for chunk in id_chunks(self._order.tolist()):  # external ids a query at a time
            yield from self._items(chunk)

    def _items(self, ids: Sequence[int]) -> list[QueueItem]:
        external = self._external_of(ids) if ids else {}
        return [self._item(rid, external.get(rid)) for rid in ids]

    def _item(self, rid: int, external_id: str | None) -> QueueItem:
        found = standing(self._counts.get(rid, {}), self._criteria_count, self._need,
                         self._reviewer_key)
        return QueueItem(
            response_id=rid, external_id=external_id, disagree=rid in self._disagree,
            failed=rid in self._failed, reviewed_count=found.mine,
            criteria_count=self._criteria_count, reviewers=found.complete,
            needs_review=found.needs, in_sample=rid in self._rank)
