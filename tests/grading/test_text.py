"""Inputs to grade: plain strings, tagged strings and thinking/output dicts."""

from __future__ import annotations

import warnings

import pytest

from grading import DroppedTextWarning, normalize_to_grade_input, parse_thinking_output, word_count


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
        pytest.param({"output": 3}, ValueError, id="non-string"),
        pytest.param({"thinking": None, "output": "x"}, ValueError, id="null-thinking"),
        pytest.param(42, ValueError, id="not-text"),
        pytest.param(["x"], ValueError, id="list"),
    ],
)
def test_normalize_rejects_bad_input_with_value_error_as_rubric_does(value, error):
    with pytest.raises(error):
        normalize_to_grade_input(value)


def test_unknown_dict_keys_are_ignored_with_a_warning_naming_them_as_rubric_does():
    with pytest.warns(UserWarning, match="'answer'"):
        assert normalize_to_grade_input({"answer": "a", "output": "x"}) == {
            "thinking": "", "output": "x"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("<thinking>plan</thinking>The answer is 42.",
                     {"thinking": "plan", "output": "The answer is 42."},
                     id="thinking-then-untagged-output"),
        pytest.param("Intro <thinking>a</thinking> middle <thinking>b</thinking> end",
                     {"thinking": "a", "output": "Intro  middle  end"},
                     id="every-thinking-block-removed-from-the-output"),
    ],
)
def test_text_after_thinking_is_the_output(text, expected):
    assert parse_thinking_output(text) == expected


@pytest.mark.parametrize(
    ("text", "what"),
    [
        pytest.param("Dosage: 5 mg.\n<output>see above</output>", "13 characters",
                     id="text-before-output"),
        pytest.param("<output>a</output> and also b", "10 characters", id="text-after-output"),
        pytest.param("<thinking>a</thinking>x<thinking>b</thinking>", "1 further",
                     id="second-thinking-block"),
    ],
)
def test_text_left_out_by_the_tags_is_never_dropped_silently(text, what):
    with pytest.warns(DroppedTextWarning, match=what):
        parse_thinking_output(text)


def test_fully_tagged_text_drops_nothing_and_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parse_thinking_output(" <thinking>a</thinking>\n<output>b</output>\n") == {
            "thinking": "a", "output": "b"}


def test_word_count_splits_on_any_whitespace():
    assert word_count(" one\ttwo\nthree  ") == 3
    assert word_count("") == 0
