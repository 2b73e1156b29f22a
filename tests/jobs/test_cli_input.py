"""``rubric-workbench grade`` with awkward files, on SQLite and PostgreSQL: separators are
detected, the app's size limit applies (and can be raised), long file names fit, broken
files write nothing."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from storage import cli
from storage import models as m
from storage.engine import open_database
from storage.services import datasets

RUBRIC = """\
- name: accurate
  requirement: States the dose correctly
  weight: 10
"""


def _grade(tmp_path, fake, responses, db_url, *extra: str) -> int:
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    return cli.main(["grade", "--rubric", str(tmp_path / "rubric.yaml"), "--responses",
                     str(responses), "--grader", "per-criterion", "--model",
                     "openai/fake-judge", "--api-base", fake.api_base, "--db", db_url, *extra])


def _rows(db_url) -> tuple[int, int, int]:
    sessions = open_database(db_url)
    with sessions() as session:
        return tuple(session.scalar(select(func.count()).select_from(t))
                     for t in (m.RubricRow, m.DatasetRow, m.ResponseRow))


@pytest.mark.parametrize(("content", "separator"), [
    pytest.param("id;query;text\na;q1;first, answer\nb;q2;second\n", "semicolon", id="semicolon"),
    pytest.param("id\tquery\ttext\na\tq1\tfirst, answer\nb\tq2\tsecond\n", "tab", id="tab"),
])
def test_grade_detects_semicolons_and_tabs(tmp_path, fake_provider, db_url, capsys, content,
                                           separator):
    path = tmp_path / "r.csv"
    path.write_text(content)
    out = tmp_path / "out.jsonl"
    assert _grade(tmp_path, fake_provider, path, db_url, "--out", str(out)) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["response_id"] for r in records] == ["a", "b"]
    assert any("first, answer" in b["messages"][-1]["content"] for b in fake_provider.bodies)


def test_grade_applies_the_apps_file_limit_and_a_flag_raises_it(
        tmp_path, fake_provider, db_url, capsys, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_MAX_UPLOAD_MB", "0.01")  # about 10 KB
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "x" * 20_000}) + "\n")
    assert _grade(tmp_path, fake_provider, path, db_url) == 2
    err = capsys.readouterr().err
    assert "big.jsonl: nothing was imported" in err and "the limit is 0.01 MB" in err
    assert "--max-file-mb" in err and "Traceback" not in err
    assert fake_provider.bodies == [] and _rows(db_url) == (0, 0, 0)
    assert _grade(tmp_path, fake_provider, path, db_url, "--max-file-mb", "1") == 0


def test_a_file_name_longer_than_a_dataset_name_is_shortened(tmp_path, fake_provider, db_url):
    path = tmp_path / ("r" * 190 + ".csv")
    path.write_text("id,text\na,an answer\n")
    assert _grade(tmp_path, fake_provider, path, db_url) == 0
    [dataset] = datasets.list_datasets(open_database(db_url))
    assert len(dataset.name) <= 200 and dataset.name.startswith("rrrr")


def test_an_unclosed_quote_stops_grade_before_anything_is_written(
        tmp_path, fake_provider, db_url, capsys):
    path = tmp_path / "r.csv"
    path.write_text('id,text\na,fine\nb,"never closed\nc,swallowed\n')
    assert _grade(tmp_path, fake_provider, path, db_url) == 2
    err = capsys.readouterr().err
    assert "r.csv: nothing was imported" in err and "line 3: a quoted field starts" in err
    assert fake_provider.bodies == [] and _rows(db_url) == (0, 0, 0)


def test_an_unreadable_responses_file_is_a_message(tmp_path, fake_provider, db_url, capsys):
    folder = tmp_path / "answers.csv"
    folder.mkdir()  # a directory where a file was expected: open() fails
    assert _grade(tmp_path, fake_provider, folder, db_url) == 2
    err = capsys.readouterr().err
    assert "answers.csv" in err and "cannot read the file" in err and "Traceback" not in err
