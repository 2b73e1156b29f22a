"""The responses' labels as a column (storage.services.label_column): the mapping the dict
was, in a fraction of its memory."""

from __future__ import annotations

import pickle
import sys

import pytest

from storage.services.label_column import LabelColumn


def _labels() -> dict[int, str]:
    # ascending ids with gaps; empty, non-ASCII (two and four bytes a character) and long
    return {3: "r0", 4: "", 9: "réponse-é", 10: "#10", 12: "回答-7", 40: "😀 emoji", 41: "x" * 300}


def test_the_column_is_the_dict_it_replaces_key_for_key_and_in_order():
    labels = _labels()
    column = LabelColumn(labels.keys(), labels.values())

    assert column == labels and labels == column
    assert list(column) == list(labels) and column.keys() == list(labels)
    assert column.values() == list(labels.values())
    assert column.items() == list(labels.items())
    assert len(column) == len(labels)
    for rid, label in labels.items():
        assert column[rid] == label and column.get(rid) == label and rid in column
    for missing in (0, 5, 11, 42, 10**12, -3, "3", 3.0, True, None):
        assert missing not in column and column.get(missing, "none") == "none"
        with pytest.raises(KeyError):
            column[missing]
    assert column != {**labels, 3: "other"} and column != {**labels, 99: "r"}


def test_a_column_survives_pickling_and_an_empty_one_is_empty():
    column = LabelColumn(_labels().keys(), _labels().values())
    again = pickle.loads(pickle.dumps(column))
    assert again == column and again.items() == column.items()
    empty = LabelColumn([], [])
    assert empty == {} and len(empty) == 0 and list(empty) == [] and empty.get(1) is None


def test_ids_out_of_order_or_labels_that_do_not_match_are_refused():
    with pytest.raises(ValueError, match="ascending"):
        LabelColumn([2, 1], ["a", "b"])
    with pytest.raises(ValueError, match="ascending"):
        LabelColumn([1, 1], ["a", "b"])
    with pytest.raises(ValueError, match="as many"):
        LabelColumn([1, 2], ["a"])
    with pytest.raises(TypeError, match="strings"):
        LabelColumn([1, 2], ["a", None])


def test_100000_labels_take_a_fraction_of_the_dicts_memory():
    labels = {rid: f"response-{rid:06d}" for rid in range(1, 100_001)}
    column = LabelColumn(labels.keys(), labels.values())
    held = (sys.getsizeof(column._ids) + sys.getsizeof(column._ends)
            + sys.getsizeof(column._text))
    as_dict = sys.getsizeof(labels) + sum(sys.getsizeof(k) + sys.getsizeof(v)
                                          for k, v in labels.items())
    assert column == labels
    assert held < as_dict / 4, (held, as_dict)
