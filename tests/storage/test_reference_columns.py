"""Reference answers at upload: the column is guessed from its name (``answer`` only beside a
column that is clearly the response), mapped explicitly otherwise, stored on the response,
and a blank cell means no reference."""

from __future__ import annotations

import pytest

from storage.errors import ImportProblemsError
from storage.response_files import ColumnMapping
from storage.services import datasets
from tests.actors import ADMIN


def _rows(columns: list[str], count: int = 4) -> list[dict]:
    return [{c: (f"r{i}" if c == "id" else str(40 + i) if c in ("gold", "answer")
                 else f"some longer text for {c} number {i}") for c in columns}
            for i in range(count)]


@pytest.mark.parametrize(("columns", "reference", "text"), [
    pytest.param(["id", "question", "response", "reference"], "reference", "response",
                 id="reference"),
    pytest.param(["id", "prompt", "output", "reference_answer"], "reference_answer", "output",
                 id="reference-answer"),
    pytest.param(["id", "query", "completion", "ground_truth"], "ground_truth", "completion",
                 id="ground-truth"),
    pytest.param(["id", "question", "text", "gold"], "gold", "text",
                 id="gold-short-unique-tokens-are-no-id"),
    pytest.param(["id", "query", "response", "expected"], "expected", "response",
                 id="expected"),
    pytest.param(["id", "query", "expected_answer", "response"], "expected_answer", "response",
                 id="expected-answer-is-not-the-response"),
    pytest.param(["id", "question", "answer", "completion"], "answer", "completion",
                 id="answer-beside-a-completion"),
    pytest.param(["id", "question", "answer"], None, "answer", id="answer-alone-is-the-response"),
    pytest.param(["id", "query", "text"], None, "text", id="no-reference"),
])
def test_the_reference_column_is_guessed(columns, reference, text):
    guess = ColumnMapping.guess(columns, _rows(columns))
    assert (guess.reference, guess.text) == (reference, text)
    assert guess.id == "id"


def test_a_reference_is_stored_and_a_blank_cell_is_none(sessions):
    rows = [{"id": "a", "text": "five", "solution": "5"},
            {"id": "b", "text": "six", "solution": "  "}]
    mapping = ColumnMapping(text="text", id="id", reference="solution")
    dataset = datasets.create_dataset(sessions, "Math", responses=rows, mapping=mapping,
                                      actor=ADMIN)
    stored = datasets.list_responses(sessions, dataset.id, limit=None)
    assert [(r.external_id, r.reference, r.metadata) for r in stored] == [
        ("a", "5", {}), ("b", None, {})]
    one = datasets.add_response(sessions, dataset.id, "seven", external_id="c", reference="7",
                                actor=ADMIN)
    assert datasets.get_response(sessions, one.id).reference == "7"


def test_a_reference_that_is_not_text_is_refused_with_its_row(sessions):
    rows = [{"text": "five", "reference": "5"}, {"text": "six", "reference": {"a": 1}}]
    with pytest.raises(ImportProblemsError) as caught:
        datasets.create_dataset(sessions, "Bad", responses=rows, actor=ADMIN)
    assert "row 2" in str(caught.value) and "'reference' must be text" in str(caught.value)
    assert datasets.list_datasets(sessions) == []
