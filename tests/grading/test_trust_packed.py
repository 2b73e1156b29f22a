"""Numbers held packed until the bootstrap product needs them come back bit for bit."""

import numpy as np
import pytest

from grading.trust.packed import pack


@pytest.mark.parametrize(("values", "kind"), [
    pytest.param([1200.0, 0.0, 53_000.0, 7.0], "int32", id="lengths in characters"),
    pytest.param([0.0, 1.0, 1.0, 0.0], "int8", id="met and unmet"),
    pytest.param([0.25, 0.5, 1.0, 0.5, 0.0], "uint8", id="a few option values"),
    pytest.param([0.1 * i for i in range(300)], "float64", id="many distinct values"),
    pytest.param([0.0, -0.0, 1.0], "float64", id="a negative zero keeps its sign"),
    pytest.param([3e9, 1.0, 3e9], "uint8", id="whole but over 32 bits, a few values"),
    pytest.param([3e9 + i for i in range(300)], "float64", id="whole, over 32 bits, many"),
    pytest.param([], "float64", id="nothing"),
])
def test_packed_values_come_back_bit_for_bit(values, kind):
    given = np.asarray(values, dtype="float64")
    packed = pack(values)
    assert packed.stored.dtype == np.dtype(kind)
    assert len(packed) == len(given)
    assert packed.unpack().tobytes() == given.tobytes()
    if len(given) > 2:
        assert packed.unpack(slice(1, 3)).tobytes() == given[1:3].tobytes()
        picked = np.array([2, 0])
        assert packed.unpack(picked).tobytes() == given[picked].tobytes()


def test_packed_lengths_hold_a_fraction_of_their_floats():
    lengths = np.random.default_rng(0).integers(0, 40_000, 100_000).astype(float)
    packed = pack(lengths)
    assert packed.stored.nbytes * 2 == lengths.nbytes
    assert pack(lengths > 20_000).stored.nbytes * 8 == lengths.nbytes
