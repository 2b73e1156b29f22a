"""Pairing two sources' responses: by id or query, nothing dropped silently."""

from __future__ import annotations

import pytest

from grading.pairwise.matching import Item, MatchingError, match


def items(*rows: tuple[str | None, str | None, str]) -> list[Item]:
    return [Item(location=f"line {n}", id=i, query=q, text=t)
            for n, (i, q, t) in enumerate(rows, start=1)]


def test_pairs_by_id_in_a_order_and_lists_what_has_no_partner():
    a = items(("2", "q2", "a2"), ("1", "q1", "a1"), ("x", "qx", "ax"))
    b = items(("1", "q1", "b1"), ("2", "q2", "b2"), ("y", "qy", "by"))

    result = match(a, b, by="id")

    assert [(p.key, p.a.text, p.b.text) for p in result.pairs] == [("2", "a2", "b2"),
                                                                   ("1", "a1", "b1")]
    assert [i.id for i in result.only_a] == ["x"] and [i.id for i in result.only_b] == ["y"]


def test_pairs_by_query_text_with_spaces_collapsed_and_sets_identical_texts_apart():
    a = items((None, "What  is 2+2?", "4"), (None, "Capital?", "Paris"))
    b = items((None, "What is 2+2? ", "four"), (None, "Capital?", "Paris"))

    result = match(a, b, by="query")

    assert [p.key for p in result.pairs] == ["What is 2+2?"]
    assert [p.key for p in result.identical] == ["Capital?"]
    assert result.pairs[0].query == "What  is 2+2?"


def test_thinking_counts_when_telling_identical_texts():
    a = [Item("line 1", {"thinking": "hmm", "output": "4"}, id="1")]
    b = [Item("line 1", {"thinking": "", "output": "4"}, id="1")]
    assert len(match(a, b).pairs) == 1


@pytest.mark.parametrize(("a", "b", "by", "message"), [
    pytest.param(items(("1", "q", "t")), items(("2", "r", "u")), "id",
                 "A and B have no id in common", id="nothing-in-common"),
    pytest.param(items(("1", "q", "t"), ("1", "r", "u")), items(("1", "q", "v")), "id",
                 "A: line 2 repeats the id '1' of line 1", id="duplicate-id"),
    pytest.param(items(("1", "q", "t")), items(("1", None, "v")), "query",
                 "B: line 1 has no query", id="missing-query"),
])
def test_unpairable_sources_are_refused_naming_where(a, b, by, message):
    with pytest.raises(MatchingError, match=message):
        match(a, b, by=by)
