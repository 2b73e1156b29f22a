"""The judges' pattern rows as one stored value (storage.services.judge_rows_codec): read
back equal and in order, whatever their codes, units and counts; a value of another shape
is refused (the store counts the rows again), never read as other rows."""

from __future__ import annotations

import random

import pytest

from storage.services.judge_rows_codec import UnknownRows, decode, encode


def _rows(seed: int, width: int, count: int) -> tuple:
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        codes = tuple(rng.choice((None, 1, 2, 3)) for _ in range(width))
        unit = rng.random() < 0.6
        found.append(((rng.randint(1, 40), None, *codes,
                       rng.randint(1, 10**6) if unit else None,
                       rng.randint(0, 2**40) if unit else None), rng.randint(1, 10**5)))
    return tuple(found)


@pytest.mark.parametrize("width", [1, 2, 4, 7])
@pytest.mark.parametrize("seed", [1, 2])
def test_rows_read_back_equal_and_in_their_order(seed, width):
    rows = _rows(seed, width, 500)
    assert decode(encode(rows, width), width) == rows


def test_a_unit_with_a_response_but_no_rank_and_big_criteria_read_back():
    rows = (((70_000, None, 1, None, 5, None), 2), ((3, None, None, None, None, 0), 1),
            ((3, None, 2, 3, None, None), 9))
    assert decode(encode(rows, 2), 2) == rows


def test_no_rows_read_back_as_none():
    assert decode(encode((), 3), 3) == ()


@pytest.mark.parametrize("damage", [
    pytest.param(lambda blob: blob[:-1], id="cut short"),
    pytest.param(lambda blob: blob + b"\0", id="longer"),
    pytest.param(lambda blob: b"", id="empty"),
])
def test_a_value_not_whole_is_refused(damage):
    rows = _rows(3, 3, 20)
    with pytest.raises(UnknownRows):
        decode(damage(encode(rows, 3)), 3)


def test_a_value_of_other_judges_is_refused():
    with pytest.raises(UnknownRows):
        decode(encode(_rows(4, 3, 10), 3), 4)


def test_a_row_that_is_not_a_judges_row_is_not_encoded():
    with pytest.raises(ValueError):
        encode((((1, 2, 1, 1, None, None), 1),), 2)  # people's code where None belongs
    with pytest.raises(ValueError):
        encode((((1, None, 1, None, None), 1),), 2)  # one judge's code short
