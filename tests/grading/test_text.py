"""Inputs to grade: plain strings, tagged strings and thinking/output dicts."""

from __future__ import annotations

import pytest

from grading import normalize_to_grade_input, parse_thinking_output, word_count


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("just an answer", {"thinking": "", "output": "just an answer"}, id="plain"),
        pytest.param("<thinking> a b </thinking><output>c</output>",
                     {"thinking": "a b", "output": "c"}, id="both"),
        pytest.param("<THINKING>x</THINKING>\n<Output>y</Output>",
                     {"thinking": "x", "output": "y"}, id="case-insensitive"),
        pytest.param("<output>only</output>", {"thinking": "", "output": "only"}, id="output-only"),
        pytest.param("<thinking>\nmulti\nline\n</thinking>",
                     {"thinking": "multi\nline", "output": ""}, id="thinking-only"),
    ],
)
def test_parse_thinking_output(text, expected):
    assert parse_thinking_output(text) == expected


def test_normalize_accepts_dicts_with_missing_parts():
    assert normalize_to_grade_input({"output": "x"}) == {"thinking": "", "output": "x"}
    assert normalize_to_grade_input({"thinking": "t"}) == {"thinking": "t", "output": ""}


@pytest.mark.parametrize(
    ("value", "error"),
    [
        pytest.param({"answer": "x"}, ValueError, id="unknown-key"),
        pytest.param({"output": 3}, ValueError, id="non-string"),
        pytest.param(42, TypeError, id="not-text"),
    ],
)
def test_normalize_rejects_bad_input(value, error):
    with pytest.raises(error):
        normalize_to_grade_input(value)


def test_word_count_splits_on_any_whitespace():
    assert word_count(" one\ttwo\nthree  ") == 3
    assert word_count("") == 0
