"""Answer parsers: what is tolerated and what is a (retried) parse failure."""

from __future__ import annotations

import pytest

from grading.parsing import (
    ParseError,
    extract_json_object,
    parse_criteria_answer,
    parse_holistic_answer,
    parse_verdict_answer,
)
from grading.types import Verdict


@pytest.mark.parametrize(
    ("text", "verdict", "reason"),
    [
        pytest.param('{"verdict": "MET", "reason": "ok"}', Verdict.MET, "ok", id="bare"),
        pytest.param('```json\n{"verdict": "UNMET", "reason": "no"}\n```', Verdict.UNMET, "no",
                     id="json-fence"),
        pytest.param('```\n{"verdict": "MET", "reason": "x"}\n```', Verdict.MET, "x",
                     id="plain-fence"),
        pytest.param('Here you go:\n{"verdict": "MET", "reason": "r"}\nHope that helps.',
                     Verdict.MET, "r", id="prose-around"),
        pytest.param('{"verdict": "  met ", "reason": "r"}', Verdict.MET, "r", id="case-space"),
        pytest.param('{"Verdict": "Unmet", "Reason": " r "}', Verdict.UNMET, "r", id="key-case"),
        pytest.param('{"verdict": "MET"}', Verdict.MET, "", id="reason-optional"),
        pytest.param('I think {not json} but {"verdict": "UNMET", "reason": "z"}',
                     Verdict.UNMET, "z", id="skips-non-json-braces"),
    ],
)
def test_verdict_answers_that_parse(text, verdict, reason):
    assert parse_verdict_answer(text) == (verdict, reason)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("MET", id="no-json"),
        pytest.param('{"reason": "forgot"}', id="missing-verdict"),
        pytest.param('{"verdict": "MAYBE", "reason": "r"}', id="unknown-verdict"),
        pytest.param('{"verdict": null, "reason": "r"}', id="null-verdict"),
        pytest.param('{"verdict": "CANNOT_ASSESS", "reason": "r"}', id="cannot-assess-not-allowed"),
        pytest.param('{"verdict": "MET", "reason": 3}', id="non-string-reason"),
        pytest.param('{"verdict": "MET", "reason": "unterminated', id="truncated"),
        pytest.param("[1, 2]", id="array-without-object"),
    ],
)
def test_verdict_answers_that_fail(text):
    with pytest.raises(ParseError):
        parse_verdict_answer(text)


def test_cannot_assess_accepted_when_allowed():
    text = '{"verdict": "cannot assess", "reason": "no evidence"}'
    assert parse_verdict_answer(text, allow_cannot_assess=True) == (
        Verdict.CANNOT_ASSESS, "no evidence")


N1 = '{"number": 1, "verdict": "MET"}'
N2 = '{"number": 2, "verdict": "MET"}'


def _criteria(*items: str) -> str:
    return '{"criteria": [' + ", ".join(items) + "]}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            _criteria('{"number": 1, "verdict": "MET", "reason": "a"}',
                      '{"number": 2, "verdict": "UNMET", "reason": "b"}'),
            [(Verdict.MET, "a"), (Verdict.UNMET, "b")], id="in-order"),
        pytest.param(
            _criteria('{"number": 2, "verdict": "unmet", "reason": "b"}',
                      '{"number": 1, "verdict": "met", "reason": "a"}'),
            [(Verdict.MET, "a"), (Verdict.UNMET, "b")], id="out-of-order"),
        pytest.param(
            "```json\n" + _criteria('{"number": "1", "verdict": "MET", "reason": "a"}',
                                    '{"number": 2.0, "verdict": "MET", "reason": "b"}') + "\n```",
            [(Verdict.MET, "a"), (Verdict.MET, "b")], id="fenced-numeric-strings"),
    ],
)
def test_criteria_answers_that_parse(text, expected):
    assert parse_criteria_answer(text, 2) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param('{"verdicts": []}', "no 'criteria'", id="missing-criteria-key"),
        pytest.param(_criteria(N1), r"number\(s\) 2",
                     id="missing-number-2"),
        pytest.param(_criteria(N1, N1,
                               N2), "more than once",
                     id="duplicate-number"),
        pytest.param(_criteria(N1, '{"number": 3, "verdict": "MET"}'),
                     "unknown criterion number 3", id="unknown-number"),
        pytest.param(_criteria('{"number": 0, "verdict": "MET"}', N1,
                               N2), "unknown criterion number 0",
                     id="zero-number"),
        pytest.param(_criteria('{"verdict": "MET"}', N2),
                     "no 'number'", id="entry-without-number"),
        pytest.param(_criteria('{"number": 1}', N2),
                     "no 'verdict'", id="entry-without-verdict"),
        pytest.param(_criteria('{"number": true, "verdict": "MET"}', N2),
                     "integer", id="boolean-number"),
        pytest.param(_criteria('{"number": 1, "verdict": "YES"}', N2),
                     "invalid verdict", id="invalid-verdict"),
        pytest.param('{"criteria": ["MET", "MET"]}', "must be an object", id="entries-not-objects"),
    ],
)
def test_criteria_answers_that_fail(text, message):
    with pytest.raises(ParseError, match=message):
        parse_criteria_answer(text, 2)


@pytest.mark.parametrize(
    ("text", "score"),
    [
        pytest.param('{"score": 85, "reason": "good"}', 85.0, id="int"),
        pytest.param('{"score": 72.5, "reason": "ok"}', 72.5, id="float"),
        pytest.param('{"score": "90", "reason": "ok"}', 90.0, id="numeric-string"),
        pytest.param('{"score": 0}', 0.0, id="zero"),
        pytest.param('{"score": 100}', 100.0, id="hundred"),
        pytest.param('Score below.\n```json\n{"Score": 40, "reason": "meh"}\n```', 40.0,
                     id="fenced-with-prose"),
    ],
)
def test_holistic_answers_that_parse(text, score):
    assert parse_holistic_answer(text)[0] == score


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"reason": "no score"}', id="missing-score"),
        pytest.param('{"score": 101}', id="above-100"),
        pytest.param('{"score": -1}', id="negative"),
        pytest.param('{"score": "high"}', id="non-numeric"),
        pytest.param('{"score": true}', id="boolean"),
        pytest.param('{"score": null}', id="null"),
        pytest.param('{"score": NaN}', id="nan"),
        pytest.param("85", id="bare-number-not-object"),
    ],
)
def test_holistic_answers_that_fail(text):
    with pytest.raises(ParseError):
        parse_holistic_answer(text)


def test_parse_error_keeps_the_raw_answer():
    with pytest.raises(ParseError) as caught:
        extract_json_object("no json here")
    assert caught.value.raw == "no json here"
