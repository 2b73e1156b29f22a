"""The runner's fast cache keys are the keys answers were stored under (a different key would
silently turn every cached answer into a paid call again)."""

from __future__ import annotations

import pytest

from grading.prompts import per_criterion_response_format
from storage.jobs.cache import KeyMaker, cache_key

SCHEMA = per_criterion_response_format()


@pytest.mark.parametrize("messages", [
    pytest.param([{"role": "system", "content": "Judge."},
                  {"role": "user", "content": "Is it right?"}], id="plain"),
    pytest.param([{"role": "system", "content": "Richter: «ja» — 日本語 \u2028 \"q\" \\"},
                  {"role": "user", "content": "emoji 🎉 and \n newlines\t"}], id="unicode"),
    pytest.param([{"role": "user", "content": "", "name": "x"}], id="extra-field"),
])
@pytest.mark.parametrize("response_format", [pytest.param(SCHEMA, id="schema"),
                                             pytest.param(None, id="no-schema")])
def test_fast_keys_equal_the_canonical_cache_key(messages, response_format):
    sampling = {"temperature": 0.0, "structured_output": True, "top_p": 0.5}
    make = KeyMaker(sampling)
    for _ in range(2):  # the second call uses the memoised tail
        assert make("openai/judge", messages, response_format) == cache_key(
            "openai/judge", messages, response_format, sampling)
    assert make("openai/other", messages, response_format) == cache_key(
        "openai/other", messages, response_format, sampling)


def test_each_schema_object_is_keyed_by_its_own_text():
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}}}
    make = KeyMaker({})
    messages = [{"role": "user", "content": "q"}]
    first = make("m", messages, schema)
    other = {"type": "object"}  # a new object may reuse a freed id: the tail is checked
    assert make("m", messages, other) == cache_key("m", messages, other, {})
    assert first == cache_key("m", messages, schema, {})
