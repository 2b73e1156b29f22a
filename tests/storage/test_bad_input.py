"""Hostile and broken input, on SQLite and PostgreSQL alike: every refusal names the field and
the row or line, nothing is half-written, and PostgreSQL never sees a value it would refuse."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from grading.errors import RubricValidationError
from grading.types import Criterion
from storage import model_presets
from storage import models as m
from storage.errors import ImportProblemsError, InvalidInputError
from storage.response_files import iter_responses, parse_file, read_responses
from storage.services import datasets, labels, reviews, rubrics, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA

DEEP = 5000


def _counts(sessions) -> dict[str, int]:
    with sessions() as session:
        return {table.__tablename__: session.scalar(select(func.count()).select_from(table))
                for table in (m.RubricRow, m.RubricVersionRow, m.CriterionRow, m.DatasetRow,
                              m.ResponseRow, m.HumanVerdictRow, m.RunRow)}


def _import_problems(sessions, data: bytes, filename: str) -> list[str]:
    before = _counts(sessions)
    with pytest.raises(ImportProblemsError) as caught:
        datasets.create_dataset(sessions, "Broken", responses=iter_responses(data, filename),
                                actor=ADMIN)
    assert _counts(sessions) == before  # nothing written, not even the dataset
    return [str(p) for p in caught.value.problems]


# -- 10.12 an unterminated quote ----------------------------------------------------------------
@pytest.mark.parametrize(("data", "line"), [
    pytest.param(b'id,text\n1,"hello\n2,world\n3,again\n', 2, id="never-closed"),
    pytest.param(b'id,text\n1,ok\n2,"multi\nline, fine"\n3,"bad\n4,x\n5,y\n', 5,
                 id="after-a-good-multiline-field"),
    pytest.param(b'id,text\n1,"abc\n2,def\n3,"ghi"\n', 2, id="closed-later-by-another-quote"),
    pytest.param(b'id;text\n1;"open\n2;x\n', 2, id="semicolon-separated"),
])
def test_an_unclosed_quote_names_the_line_where_the_field_starts_and_writes_nothing(
        sessions, data, line):
    [problem] = _import_problems(sessions, data, "r.csv")
    assert problem.startswith(f"line {line}: ")
    assert "quote" in problem and "Traceback" not in problem


# -- 10.13 deep nesting -------------------------------------------------------------------------
def _deep_jsonl() -> bytes:
    deep = "[" * DEEP + "]" * DEEP
    return ('{"text": "fine"}\n{"text": "ok", "meta": ' + deep + '}\n').encode()


@pytest.mark.parametrize(("data", "filename", "where"), [
    pytest.param(_deep_jsonl(), "r.jsonl", "line 2", id="jsonl-metadata"),
    pytest.param(('{"text": "x", "m": ' + "[" * 150 + "]" * 150 + "}\n").encode(), "r.jsonl",
                 "line 1", id="jsonl-deep-but-readable"),
    pytest.param(('[{"text": "a"},\n{"text": "b", "m": ' + "[" * DEEP + "]" * DEEP + "}]")
                 .encode(), "r.json", "line 2", id="json-list"),
])
def test_deep_nesting_is_refused_with_its_line(sessions, data, filename, where):
    [problem] = _import_problems(sessions, data, filename)
    assert problem.startswith(f"{where}") and "nested more than 100 levels" in problem


@pytest.mark.parametrize(("text", "filename", "line"), [
    pytest.param("criteria:\n  - requirement: x\n    extra: " + "[" * DEEP + "]" * DEEP,
                 "r.yaml", 3, id="yaml-flow"),
    pytest.param("a:\n" + "".join("  " * i + "b:\n" for i in range(1, DEEP)), "r.yaml", None,
                 id="yaml-block"),
    pytest.param('{"criteria": ' + "[" * DEEP + "]" * DEEP + "}", "r.json", 1, id="json"),
    pytest.param('{"criteria": ' + "[" * DEEP + "]" * DEEP + "}", None, 1, id="json-sniffed"),
])
def test_a_deeply_nested_rubric_is_refused_with_its_line(sessions, text, filename, line):
    before = _counts(sessions)
    with pytest.raises(RubricValidationError) as caught:
        rubrics.import_rubric(sessions, "Deep", text, filename=filename, actor=ADMIN)
    message = str(caught.value)
    assert "nested more than 100 levels" in message
    if line:
        assert f"line {line}" in message
    assert _counts(sessions) == before


# -- 10.14 what PostgreSQL would refuse ---------------------------------------------------------
LONG = "x" * 201


@pytest.mark.parametrize(("make", "words"), [
    pytest.param(lambda s: rubrics.create_rubric(s, LONG, CRITERIA, actor=ADMIN),
                 "the rubric name is 201 characters long; the limit is 200", id="rubric-name"),
    pytest.param(lambda s: rubrics.create_rubric(s, "R", [
        *CRITERIA[:1], Criterion(name=LONG, requirement="r")], actor=ADMIN),
                 f"criterion 2 ('{LONG}'): its name is 201 characters", id="criterion-name"),
    pytest.param(lambda s: rubrics.create_rubric(s, "R", [
        Criterion(name="a", requirement="r\x00"), Criterion(requirement="s", section=LONG)],
        actor=ADMIN),
                 "criterion 1 ('a'): its requirement contains a NUL character",
                 id="nul-requirement"),
    pytest.param(lambda s: rubrics.create_rubric(s, "R\x00", CRITERIA, actor=ADMIN),
                 "the rubric name contains a NUL character", id="nul-rubric-name"),
    pytest.param(lambda s: rubrics.create_rubric(s, "R", CRITERIA, description="d\x00",
                                                 actor=ADMIN),
                 "the description contains a NUL", id="nul-description"),
    pytest.param(lambda s: datasets.create_dataset(s, "D" * 181 + ".csv 2026-01-01 00:00:00",
                                                   actor=ADMIN),
                 "the dataset name is 205 characters long", id="long-file-name-as-dataset"),
])
def test_text_the_database_cannot_store_is_refused_before_writing(sessions, make, words):
    before = _counts(sessions)
    with pytest.raises(InvalidInputError) as caught:
        make(sessions)
    assert words in str(caught.value)
    assert _counts(sessions) == before


@pytest.mark.parametrize(("rows", "problem"), [
    pytest.param([{"text": "ok"}, {"text": "a\x00b"}],
                 "row 2: the 'text' text contains a NUL character (\\x00) at position 2",
                 id="nul-in-text"),
    pytest.param([{"text": "ok", "query": "q\x00"}], "row 1: the 'query' text contains a NUL",
                 id="nul-in-query"),
    pytest.param([{"text": "ok", "id": "i" * 501}],
                 "row 1: the id is 501 characters long; the limit is 500", id="long-id"),
    pytest.param([{"text": "ok", "source": "s\x00"}], "row 1: metadata a text contains a NUL",
                 id="nul-in-metadata"),
    pytest.param([{"text": "ok", "k\x00": 1}], "row 1: metadata a key contains a NUL",
                 id="nul-in-metadata-key"),
    pytest.param([{"text": "ok", "score": float("nan")}], "row 1: metadata holds nan",
                 id="nan-in-metadata"),
    pytest.param([{"text": "\ud800"}], "row 1: the 'text' text contains an unpaired surrogate",
                 id="lone-surrogate"),
])
def test_response_rows_that_cannot_be_stored_are_located(sessions, rows, problem):
    before = _counts(sessions)
    with pytest.raises(ImportProblemsError) as caught:
        datasets.create_dataset(sessions, "D", responses=rows, actor=ADMIN)
    assert str(caught.value.problems[0]).startswith(problem)
    assert _counts(sessions) == before


def test_a_nul_byte_in_a_jsonl_file_is_located(sessions):
    data = b'{"text": "fine"}\n{"text": "bad \\u0000 byte"}\n'
    assert _import_problems(sessions, data, "r.jsonl") == [
        "line 2: the 'text' text contains a NUL character (\\x00) at position 5, which the "
        "database cannot store; remove it"]


def _reviewable(sessions):
    version = rubrics.create_rubric(sessions, "R", CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, "D", responses=[{"id": "r1", "text": "a"}],
                                      actor=ADMIN)
    [response] = datasets.list_responses(sessions, dataset.id)
    return version, dataset, response


@pytest.mark.parametrize(("reviewer", "note", "words"), [
    pytest.param(LONG, "", "the reviewer name is 201 characters long", id="long-reviewer"),
    pytest.param("ana\x00", "", "the reviewer name contains a NUL", id="nul-reviewer"),
    pytest.param("ana", "n\x00", "the note contains a NUL", id="nul-note"),
])
def test_a_verdict_with_unstorable_text_is_refused(sessions, reviewer, note, words):
    version, _, response = _reviewable(sessions)
    with pytest.raises(InvalidInputError) as caught:
        reviews.set_human_verdict(sessions, response_id=response.id,
                                  criterion_id=version.criteria[0].id, verdict="MET",
                                  actor=local_actor(reviewer), note=note)
    assert words in str(caught.value)
    assert _counts(sessions)[m.HumanVerdictRow.__tablename__] == 0


def test_a_verdict_sheet_with_unstorable_text_names_row_and_column(sessions):
    version, dataset, _ = _reviewable(sessions)
    sheet = (f"response_id,criterion,verdict,reviewer,note\nr1,accurate,MET,ana,fine\n"
             f"r1,cites,MET,{LONG},ok\nr1,concise,MET,bo,a\x00b\n")
    with pytest.raises(ImportProblemsError) as caught:
        labels.import_human_verdicts(sessions, version.id, dataset.id, sheet, actor=ADMIN,
                                     create_reviewers=True)  # new names: only text is wrong
    assert [str(p) for p in caught.value.problems] == [
        "row 2 (line 3), column 'reviewer': the value is 201 characters long; the limit is 200",
        "row 3 (line 4), column 'note': the value contains a NUL character (\\x00) at "
        "position 2, which the database cannot store; remove it",
    ]
    assert _counts(sessions)[m.HumanVerdictRow.__tablename__] == 0


@pytest.mark.parametrize(("kwargs", "words"), [
    pytest.param({"model": "openai/" + "m" * 300}, "the model name is 307 characters long",
                 id="long-model"),
    pytest.param({"name": LONG}, "the run name is 201 characters long", id="long-run-name"),
    pytest.param({"name": "n\x00"}, "the run name contains a NUL", id="nul-run-name"),
])
def test_a_run_with_unstorable_names_is_refused(sessions, kwargs, words):
    version, dataset, _ = _reviewable(sessions)
    with pytest.raises(InvalidInputError) as caught:
        runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                        grader="per_criterion", **{"model": "openai/x", **kwargs}, actor=ADMIN)
    assert words in str(caught.value)
    assert _counts(sessions)[m.RunRow.__tablename__] == 0


# -- 10.15 NaN / Infinity, separators, streaming -------------------------------------------------
@pytest.mark.parametrize(("line", "where", "name"), [
    pytest.param('{"text": NaN}', "line 2, column 10", "NaN", id="nan-as-text"),
    pytest.param('{"text": "x", "score": Infinity}', "line 2, column 24", "Infinity",
                 id="infinity-in-metadata"),
    pytest.param('{"text": "x", "score": -Infinity}', "line 2, column 24", "-Infinity",
                 id="minus-infinity"),
])
def test_nan_and_infinity_in_jsonl_are_refused_with_their_place(sessions, line, where, name):
    data = ('{"text": "fine"}\n' + line + "\n").encode()
    [problem] = _import_problems(sessions, data, "r.jsonl")
    assert problem.startswith(f"{where}: {name} is not a JSON value")


@pytest.mark.parametrize(("data", "description"), [
    pytest.param(b"id;text;note\n1;first, with a comma;n\n2;second;m\n",
                 "CSV (semicolon-separated)", id="semicolon"),
    pytest.param(b"id\ttext\tnote\n1\tfirst, with a comma\tn\n2\tsecond\tm\n",
                 "CSV (tab-separated)", id="tab"),
    pytest.param(b"id,text,note\n1,\"first; with a semicolon\",n\n2,second,m\n", "CSV",
                 id="comma-with-semicolons-inside"),
])
def test_the_separator_is_detected(sessions, data, description):
    assert parse_file(data, "r.csv").description == description
    dataset = datasets.create_dataset(sessions, "D", responses=iter_responses(data, "r.csv"),
                                      actor=ADMIN)
    first, second = datasets.list_responses(sessions, dataset.id)
    assert (first.external_id, second.output) == ("1", "second")
    assert first.output.startswith("first") and first.metadata == {"note": "n"}


def test_a_stream_is_stored_in_batches_and_a_late_problem_writes_nothing(sessions, tmp_path):
    path = tmp_path / "big.jsonl"
    rows = [{"id": f"r{i}", "text": f"answer {i}"} for i in range(2500)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    dataset = datasets.create_dataset(sessions, "Big", responses=iter_responses(path), actor=ADMIN)
    stored = datasets.list_responses(sessions, dataset.id, limit=None)
    assert [r.external_id for r in stored] == [r["id"] for r in rows]

    with path.open("a") as handle:  # a duplicate id in the third batch, then a broken line
        handle.write(json.dumps({"id": "r5", "text": "again"}) + "\n{broken\n")
    before = _counts(sessions)
    with pytest.raises(ImportProblemsError) as caught:
        datasets.create_dataset(sessions, "Big again", responses=iter_responses(path), actor=ADMIN)
    assert [str(p) for p in caught.value.problems] == [
        "line 2502, column 2: not valid JSON: Expecting property name enclosed in double quotes"]
    assert _counts(sessions) == before
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, {"id": "r5", "text": "x"}]))
    with pytest.raises(ImportProblemsError) as caught:
        datasets.create_dataset(sessions, "Big again", responses=iter_responses(path), actor=ADMIN)
    assert [str(p) for p in caught.value.problems] == [
        "line 2501: id 'r5' is already used by line 6"]
    assert _counts(sessions) == before


def test_read_responses_reads_a_file_path_the_same_as_its_bytes(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes("id;text\n1;café\n".encode("utf-16"))
    assert read_responses(path) == read_responses(path.read_bytes(), "r.csv")


@pytest.mark.parametrize(("model", "api_base", "words"), [
    pytest.param("openai/" + "m" * 300, None, "the model name is 307 characters long",
                 id="long-model"),
    pytest.param("openai/m\x00", None, "the model name contains a NUL", id="nul-model"),
    pytest.param("openai/m", "http://127.0.0.1:8000/v1\x00", "the api_base contains a NUL",
                 id="nul-api-base"),
])
def test_a_model_preset_a_run_could_not_store_is_refused(model, api_base, words, configured_db):
    with pytest.raises(InvalidInputError) as caught:
        model_presets.add_model_preset(model, api_base, actor=ADMIN, sessions=configured_db)
    assert words in str(caught.value)
    assert model_presets.list_model_presets() == ()
