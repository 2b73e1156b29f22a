"""Reading response files: formats, column mapping, and problems located by line or row.

Pure parsing (no database); the database side of imports is in test_datasets.py.
"""

from __future__ import annotations

import json

import pytest

from storage.errors import ImportProblemsError
from storage.response_files import ColumnMapping, parse_file, read_responses


def _problems(data, filename=None, **kwargs) -> list[str]:
    with pytest.raises(ImportProblemsError) as caught:
        read_responses(data, filename, **kwargs)
    return [str(p) for p in caught.value.problems]


@pytest.mark.parametrize(("filename", "data"), [
    pytest.param("r.csv", b"id,query,text\n1,Q1,A1\n2,Q2,\"A2, with comma\"\n", id="csv"),
    pytest.param("r.jsonl", b'{"id": 1, "query": "Q1", "text": "A1"}\n\n'
                            b'{"id": 2, "query": "Q2", "text": "A2, with comma"}\n', id="jsonl"),
    pytest.param("r.json", json.dumps([{"id": 1, "query": "Q1", "text": "A1"},
                                       {"id": 2, "query": "Q2", "text": "A2, with comma"}]
                                      ).encode(), id="json"),
    pytest.param(None, b'{"responses": [{"id": 1, "query": "Q1", "text": "A1"},'
                       b'{"id": 2, "query": "Q2", "text": "A2, with comma"}]}', id="json-sniffed"),
    pytest.param("r.csv", "\ufeffid,query,text\n1,Q1,A1\n2,Q2,\"A2, with comma\"\n"
                 .encode("utf-8"), id="csv-utf8-bom"),
    pytest.param("r.csv", "id,query,text\n1,Q1,A1\n2,Q2,\"A2, with comma\"\n"
                 .encode("utf-16"), id="csv-utf16"),
])
def test_every_format_reads_the_same_responses(filename, data):
    responses = read_responses(data, filename)
    assert [(r.external_id, r.query, r.output) for r in responses] == [
        ("1", "Q1", "A1"), ("2", "Q2", "A2, with comma")]


def test_default_mapping_recognises_common_column_names():
    mapping = ColumnMapping.guess(["Prompt", "completion", "uid", "reasoning", "x"])
    assert mapping == ColumnMapping(text="completion", query="Prompt", id="uid",
                                    thinking="reasoning")


def test_csv_problems_name_row_and_line():
    data = b"id,text\n1,fine\n2\n3,\n\n4,\"multi\nline\"\n4,dup\n"
    assert _problems(data, "r.csv") == [
        "row 2 (line 3): 1 values but the header has 2 columns",
    ]
    data = b"id,text\n1,fine\n3,\n4,\"multi\nline\"\n4,dup\n"
    assert _problems(data, "r.csv") == [
        "row 2 (line 3): the text column 'text' is empty",
        "row 4 (line 6): id '4' is already used by row 3 (line 4)",
    ]


def test_jsonl_problems_name_the_line_and_column():
    data = b'{"text": "ok"}\n{"text": "broken"\n[1, 2]\n{"text": 5}\n{"text": null}\n'
    assert _problems(data, "r.jsonl") == [
        "line 2, column 18: not valid JSON: Expecting ',' delimiter",
        "line 3: each line must be a JSON object",
    ]


def test_json_rows_are_validated_all_at_once():
    data = json.dumps([{"text": "ok"}, {"text": ""}, 3, {"text": ["a"]}]).encode()
    assert _problems(data, "r.json") == ["item 3: must be a JSON object"]
    data = json.dumps([{"text": "ok"}, {"text": ""}, {"text": ["a"]}]).encode()
    assert _problems(data, "r.json") == [
        "item 2: the text column 'text' is empty",
        "item 3: 'text' must be text, got list",
    ]


def test_a_missing_mapped_column_is_reported_with_the_columns_found():
    assert _problems(b"answer_text,q\nA,Q\n", "r.csv",
                     mapping=ColumnMapping(text="output", query="q")) == [
        "header: column 'output' not found; the file has: answer_text, q"]


def test_a_non_utf8_file_is_explained():
    data = "id,text\n1,café\n".encode("cp1252")
    [problem] = _problems(data, "r.csv")
    assert problem.startswith("line 2, byte ")
    assert "not UTF-8" in problem and "CSV UTF-8" in problem


def test_empty_and_headless_files_are_explained():
    assert _problems(b"", "r.csv") == ["the file is empty"]
    assert _problems(b"id,text\n", "r.csv") == ["the file has no rows"]
    assert _problems(b"[]", "r.json") == ["the file has no rows"]
    assert _problems(b'{"a": 1}', "r.json") == [
        'expected a JSON list of objects (or {"responses": [...]})']


def test_megabyte_fields_in_csv_are_read():
    big = "x" * 2_000_000
    [response] = read_responses(f"text\n{big}\n".encode(), "r.csv")
    assert response.output == big


def test_parse_file_reports_columns_for_a_mapping_step():
    parsed = parse_file(b'{"a": 1, "text": "x"}\n{"b": 2, "text": "y"}\n', "r.jsonl")
    assert parsed.format == "jsonl" and parsed.columns == ("a", "text", "b")
    assert parsed.locations == ("line 1", "line 2")


def _sixty_rows() -> bytes:
    lines = ["item id,prompt,answer text,model"]
    lines += [f"it-{i:03d},question number {i}?,\"The answer to question {i} is a full "
              f"sentence, with a comma.\",m{i % 2}" for i in range(60)]
    return ("\n".join(lines) + "\n").encode()


def test_the_id_is_never_guessed_as_the_text():
    """``item id, prompt, answer text, ...``: the id was taken as the response text and all
    60 rows called valid."""
    responses = read_responses(_sixty_rows(), "items.csv")
    assert len(responses) == 60
    first = responses[0]
    assert (first.external_id, first.query) == ("it-000", "question number 0?")
    assert first.output.startswith("The answer to question 0 is a full sentence")
    assert first.metadata == {"model": "m0"}


@pytest.mark.parametrize(("columns", "rows", "expected"), [
    pytest.param(["item id", "prompt", "answer text"],
                 [{"item id": f"x{i}", "prompt": f"q {i}", "answer text": f"long answer {i}"}
                  for i in range(5)],
                 ColumnMapping(text="answer text", query="prompt", id="item id"),
                 id="names-with-spaces"),
    pytest.param(["itemId", "body", "note"],
                 [{"itemId": f"A{i}", "body": f"a long free text answer number {i}",
                   "note": "ok"} for i in range(5)],
                 ColumnMapping(text="body", id="itemId"), id="longest-free-text-is-the-text"),
    pytest.param(["code", "col_b", "col_c"],
                 [{"code": f"c{i}", "col_b": "short", "col_c": f"much longer free text {i}"}
                  for i in range(5)],
                 ColumnMapping(text="col_c", id="code"), id="unique-tokens-are-the-id"),
    pytest.param(["response_id", "response"],
                 [{"response_id": f"r{i}", "response": f"the answer {i}"} for i in range(5)],
                 ColumnMapping(text="response", id="response_id"), id="response-id-is-no-text"),
    pytest.param(["text"], [{"text": "only one"}], ColumnMapping(text="text"), id="one-row"),
])
def test_the_mapping_is_guessed_from_names_and_content(columns, rows, expected):
    assert ColumnMapping.guess(columns, rows) == expected
