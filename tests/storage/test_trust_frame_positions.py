"""The trust frame's rows by response id (trust_frame.Positions): the mapping the dict of
every response was, over the frame's ids; the criterion-order effect places a listing's
responses on them at once, with the figure the per-response lookup gave."""

from __future__ import annotations

import random

import numpy as np
import pytest

from grading.trust.criterion_order import order_effect
from storage.services.trust_frame import Positions
from storage.services.trust_positions import pooled_order_effect


def test_positions_are_the_dict_of_the_ids_rows():
    ids = [2, 5, 6, 11, 40]
    rows = Positions(np.array(ids))
    as_dict = {rid: i for i, rid in enumerate(ids)}

    assert rows == as_dict and len(rows) == 5 and list(rows) == ids
    for rid, i in as_dict.items():
        assert rows[rid] == i and rows.get(rid) == i and rid in rows
    for missing in (0, 3, 41, -2, "5", 5.0, True, None):
        assert missing not in rows and rows.get(missing, -1) == -1
        with pytest.raises(KeyError):
            rows[missing]
    assert rows.rows_of(np.array([40, 3, 2, 99, 6])).tolist() == [4, -1, 0, -1, 2]
    assert rows.same_ids([2, 5, 6, 11, 40]) and not rows.same_ids([2, 5, 6, 11])
    assert not rows.same_ids([2, 5, 6, 11, 41])
    empty = Positions(np.array([], dtype=np.int64))
    assert len(empty) == 0 and empty.get(1) is None
    assert empty.rows_of(np.array([1, 2])).tolist() == [-1, -1]


def test_the_order_effect_over_frame_rows_is_the_one_over_a_dict():
    rng = random.Random(7)
    ids = sorted(rng.sample(range(1, 500), 200))
    runs = []
    for _run in range(3):  # a panel's members, each its own listing and values
        values = np.array([rng.choice([0.0, 1.0, np.nan]) for _ in ids])
        listed = [(rng.choice([*ids, 999, 1000]), rng.randrange(4)) for _ in range(300)]
        runs.append((listed, values))
    runs.append((None, np.zeros(len(ids))))  # a member that recorded no listing

    rows = Positions(np.array(ids))
    as_dict = {rid: i for i, rid in enumerate(ids)}
    found = pooled_order_effect(runs, rows, 4, scale=(0.0, 1.0))

    # what the per-response loop gave, row by row in the listings' order
    seen = []
    for listed, values in runs:
        for rid, position in listed or ():
            row = as_dict.get(rid)
            if row is not None and values[row] == values[row]:
                seen.append((position, 4, float(values[row])))
    assert found is not None and found == order_effect(seen, scale=(0.0, 1.0))
    assert found == pooled_order_effect(runs, as_dict, 4, scale=(0.0, 1.0))
    assert pooled_order_effect([(None, np.zeros(3))], rows, 4) is None
