"""The length penalty formula, what it counts, and its settings."""

from __future__ import annotations

import pydantic
import pytest

from grading import LengthPenalty, compute_length_penalty, parse_thinking_output, word_count
from grading.length_penalty import apply_length_penalty

REFERENCE = LengthPenalty(free_budget=10, max_cap=20, penalty_at_cap=0.5, exponent=1.6)


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        pytest.param(15, 0.164938, id="midway"),
        pytest.param(11, 0.012559, id="just-over-budget"),
        pytest.param(20, 0.5, id="at-cap"),
        pytest.param(500, 0.5, id="beyond-cap"),
        pytest.param(10, 0.0, id="at-budget"),
        pytest.param(0, 0.0, id="empty"),
    ],
)
def test_reference_vectors(count, expected):
    assert compute_length_penalty(words(count), REFERENCE) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("penalty_type", "expected_count"),
    [("ALL", 30), ("OUTPUT_ONLY", 12), ("THINKING_ONLY", 18)],
)
def test_penalty_type_selects_what_is_counted(penalty_type, expected_count):
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return word_count(text)

    config = LengthPenalty(free_budget=0, max_cap=100, penalty_at_cap=1.0, exponent=1.0,
                           count_fn=count, penalty_type=penalty_type)
    value = compute_length_penalty({"thinking": words(18), "output": words(12)}, config)
    assert value == pytest.approx(expected_count / 100)
    assert word_count(counted[0]) == expected_count


def test_tagged_string_is_split_into_thinking_and_output_when_parsed():
    config = LengthPenalty(free_budget=0, max_cap=10, penalty_at_cap=1.0, exponent=1.0,
                           penalty_type="OUTPUT_ONLY")
    text = f"<thinking>{words(8)}</thinking><output>{words(3)}</output>"
    assert compute_length_penalty(parse_thinking_output(text), config) == pytest.approx(0.3)
    # A bare string handed to compute_length_penalty is all output, as in rubric.utils;
    # Autograder.grade parses the tags first (tests/compat checks both against rubric).
    assert compute_length_penalty(text, config) == pytest.approx(1.0)


def test_custom_count_fn_is_used():
    config = LengthPenalty(free_budget=1, max_cap=3, penalty_at_cap=0.4, exponent=1.0,
                           count_fn=len)
    assert compute_length_penalty("abc", config) == pytest.approx(0.4)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"penalty_at_cap": -0.1}, id="negative-penalty"),
        pytest.param({"free_budget": 10, "max_cap": 10}, id="cap-not-after-budget"),
        pytest.param({"exponent": 0}, id="zero-exponent"),
        pytest.param({"penalty_type": "BOTH"}, id="unknown-type"),
    ],
)
def test_invalid_configs_are_rejected_when_built(kwargs):
    with pytest.raises(pydantic.ValidationError):
        LengthPenalty(**kwargs)


def test_apply_only_subtracts_and_clamps_when_normalized():
    assert apply_length_penalty(0.3, 0.5, normalize=True) == 0.0
    assert apply_length_penalty(0.3, 0.5, normalize=False) == pytest.approx(-0.2)
    assert apply_length_penalty(None, 0.5, normalize=True) is None
