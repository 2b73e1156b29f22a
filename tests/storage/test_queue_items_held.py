"""A reviewer's queue holds its ids as machine integers (storage.services.queue_items): the
items it builds are the ones sets and a tuple gave, at a fraction of their memory (a queue
of 100,000 responses is kept per reviewer for ten minutes)."""

from __future__ import annotations

import random
import sys

from storage.services.queue_items import ReviewQueue, queue_order


def _queue(ids, disagree, failed, sample, counts):
    order = queue_order(ids, needs={rid: False for rid in counts}, default_needs=True,
                        disagree=disagree, failed=failed, sample=sample,
                        unreviewed_only=False)
    return order, ReviewQueue(order, criteria_count=3, need=1, reviewer_key="ana",
                              counts=counts, disagree=disagree, failed=failed, sample=sample,
                              external_of=lambda chunk: {rid: f"x{rid}" for rid in chunk})


def test_the_items_are_the_ones_the_sets_give():
    rng = random.Random(3)
    ids = sorted(rng.sample(range(1, 10_000), 600))
    disagree = frozenset(rng.sample(ids, 200))
    failed = frozenset(rng.sample(ids, 50))
    sample = rng.sample(ids, 40)
    counts = {rid: {"ana": rng.randint(0, 3)} for rid in rng.sample(ids, 80)}
    order, queue = _queue(ids, disagree, failed, sample, counts)

    assert queue.response_ids == tuple(order) and len(queue) == len(order)
    items = list(queue)
    assert [i.response_id for i in items] == order
    for at, item in enumerate(items):
        rid = item.response_id
        assert (item.disagree, item.failed, item.in_sample) == (
            rid in disagree, rid in failed, rid in set(sample))
        assert item.external_id == f"x{rid}" and queue.id_at(at) == rid
        assert queue.position_of(rid) == at
    assert queue[5:9] == items[5:9] and queue[-1] == items[-1]
    assert queue.position_of(10_001) is None and queue.position_of("7") is None


def test_a_queue_of_100000_holds_its_ids_in_a_fraction_of_a_tuple_and_sets():
    ids = list(range(1, 100_001))
    disagree, failed = frozenset(ids[::2]), frozenset(ids[::7])
    sample = ids[::50]
    order, queue = _queue(ids, disagree, failed, sample, {})
    held = sum(sys.getsizeof(part._ids if hasattr(part, "_ids") else part)
               for part in (queue._order, queue._disagree, queue._failed, queue._rank))
    as_objects = (sys.getsizeof(tuple(order)) + sys.getsizeof(disagree)
                  + sys.getsizeof(failed) + sys.getsizeof(frozenset(sample))
                  + sum(sys.getsizeof(rid) for rid in order))
    assert held < as_objects / 3, (held, as_objects)
