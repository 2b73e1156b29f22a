"""Stamp-keyed readers keep the newest stamp's entry of a view only (issue 41: the app
process held every stamp's Agreement report, judges' inputs and trust share after grades
and verdicts landed)."""

from __future__ import annotations

import logging
import sys

import pytest
import streamlit as st

from tests.grading.test_memory import _resident_mb
from ui.stamp_cache import drop_moved, newest_only, trim_after_computing

logging.getLogger("streamlit").setLevel(logging.ERROR)  # no runtime here: memory caches
made: list[tuple] = []


@st.cache_resource(max_entries=20)
def _reader(db: str, set_id: int, stamp: tuple, _big: object = None,
            view: str = "all") -> list:
    newest_only(_reader, (db, set_id, stamp, None, view), 2, 3)
    made.append((set_id, stamp, view))
    return [set_id, stamp, view]


def test_a_new_stamp_drops_the_views_entry_at_the_stamp_before_only():
    made.clear()
    _reader.clear()
    first = _reader("db", 1, (1,))
    assert _reader("db", 1, (1,)) is first  # kept while the stamp stays
    other_set = _reader("db", 2, (1,))
    other_view = _reader("db", 1, (1,), None, "mine")
    _reader("db", 1, (2,))  # the stamp moves for set 1, view "all"
    assert made == [(1, (1,), "all"), (2, (1,), "all"), (1, (1,), "mine"), (1, (2,), "all")]
    assert _reader("db", 2, (1,)) is other_set  # another set's entry stays
    assert _reader("db", 1, (1,), view="mine") is other_view  # and another view's
    made.clear()
    again = _reader("db", 1, (1,))  # the entry of the stamp before was dropped: made again
    assert made == [(1, (1,), "all")] and again is not first
    _reader("db", 1, (2,))  # ... and it dropped the newest one: made again too
    assert made == [(1, (1,), "all"), (1, (2,), "all")]


def _fragmented() -> list:
    """~120 MB of 2 KB heap blocks, all but one in 64 freed: the kept ones pin the freed
    pages, which stay resident until the heap is trimmed (tests/grading/test_memory.py)."""
    blocks = [bytes(2048) for _ in range(60_000)]
    kept = blocks[::64]
    del blocks
    return kept


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, glibc's call")
def test_a_run_in_which_a_reader_computed_hands_the_freed_heap_back_and_only_then():
    _reader.clear()
    trim_after_computing()  # whatever earlier tests computed
    pinned = _fragmented()
    held = _resident_mb()
    trim_after_computing()  # nothing computed since: nothing handed back
    assert held - _resident_mb() < 20
    _reader("db", 9, (1,))  # a reader computes
    trim_after_computing()
    assert held - _resident_mb() > 60
    assert len(pinned) == 938  # still alive: what they pin was not what was given back


@st.cache_resource(max_entries=20)
def _judges_reader(db: str, set_id: int, judge_stamp: tuple, _report: object = None,
                   first: int | None = None) -> list:
    newest_only(_judges_reader, (db, set_id, judge_stamp, None, first), 2, 4)
    made.append((set_id, judge_stamp, first))
    return [set_id, judge_stamp, first]


def test_a_moved_judges_stamp_drops_every_view_kept_at_another_one_of_that_set_only():
    made.clear()
    _judges_reader.clear()
    whole = _judges_reader("db", 1, (1,))
    first_ten = _judges_reader("db", 1, (1,), None, 10)
    other_set = _judges_reader("db", 2, (1,))
    current = _judges_reader("db", 1, (2,), None, 5)  # a view already at the new stamp
    drop_moved(_judges_reader, ("db", 1), 2, (2,), 4)  # the report of stamp (2,) is made
    made.clear()
    assert _judges_reader("db", 2, (1,)) is other_set  # another set's entry stays
    assert _judges_reader("db", 1, (2,), None, 5) is current  # the new stamp's stays
    assert made == []
    again, again_ten = _judges_reader("db", 1, (1,)), _judges_reader("db", 1, (1,), None, 10)
    assert made == [(1, (1,), None), (1, (1,), 10)]  # both views were dropped: made again
    assert again is not whole and again_ten is not first_ten
    drop_moved(_judges_reader, ("db", 1), 2, (1,), 4)  # nothing to drop twice: no error
    assert _judges_reader("db", 1, (1,)) is again
