"""storage.id_chunks: the slices a list of ids is bound in, a bounded number a statement."""

import pytest

from storage.id_chunks import IDS_A_STATEMENT, id_chunks


@pytest.mark.parametrize("count", [0, 1, 499, 500, 501, 1_000, 1_234])
def test_slices_cover_the_ids_in_order_none_longer_than_the_size(count):
    ids = list(range(10, 10 + count))
    chunks = list(id_chunks(ids))
    assert [i for chunk in chunks for i in chunk] == ids
    assert all(0 < len(chunk) <= IDS_A_STATEMENT for chunk in chunks)
    assert all(len(chunk) == IDS_A_STATEMENT for chunk in chunks[:-1])
    assert len(chunks) == -(-count // IDS_A_STATEMENT)


def test_a_given_size():
    assert list(id_chunks([5, 3, 9, 1, 7], 2)) == [[5, 3], [9, 1], [7]]
    assert list(id_chunks(list(range(4_001)), 2_000))[-1] == [4_000]


def test_no_ids_give_no_chunk():
    assert list(id_chunks([])) == []
    assert list(id_chunks((), 2_000)) == []


def test_slices_are_of_the_sequence_given():
    assert list(id_chunks((1, 2, 3), 2)) == [(1, 2), (3,)]
    assert list(id_chunks(["a", "b", "c"], 2)) == [["a", "b"], ["c"]]  # cache keys too
    assert list(id_chunks(range(5), 2)) == [range(0, 2), range(2, 4), range(4, 5)]


def test_a_generator_is_refused_rather_than_read_whole_silently():
    with pytest.raises(TypeError):
        list(id_chunks(i for i in range(3)))


@pytest.mark.parametrize("size", [0, -1])
def test_a_size_below_one_is_refused(size):
    with pytest.raises(ValueError):
        list(id_chunks([1, 2], size))
