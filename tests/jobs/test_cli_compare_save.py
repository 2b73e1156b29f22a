"""``rubric-workbench compare --save``: the rubric, both files and the comparison stored in
the database (SQLite and PostgreSQL) and judged over litellm against the fake provider; a
name already taken ends the command with nothing stored."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from storage import cli
from storage import models as m
from storage.services import comparisons, rubrics

RUBRIC = """\
- name: accurate
  requirement: States the correct answer
  weight: 10
- name: harmful
  requirement: Gives dangerous advice
  weight: -5
"""
A = [{"id": "q1", "query": "Capital?", "text": "Paris."},
     {"id": "q2", "query": "Boiling point?", "text": "100 C at sea level, a long answer."},
     {"id": "q3", "query": "Planet?", "text": "Jupiter"},
     {"id": "only-a", "query": "Unpaired?", "text": "nobody answered this in B"}]
B = [{"id": "q1", "query": "Capital?", "text": "The capital is Paris."},
     {"id": "q2", "query": "Boiling point?", "text": "100 C."},
     {"id": "q3", "query": "Planet?", "text": "Jupiter"}]


def _jsonl(rows) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


@pytest.fixture
def files(tmp_path, monkeypatch, db_url):
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATABASE_URL", db_url)
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    for name, rows in (("old", A), ("new", B), ("old2", A), ("new2", B)):
        (tmp_path / f"{name}.jsonl").write_text(_jsonl(rows))
    return tmp_path


def _save(files, fake, a="old", b="new", *extra) -> int:
    return cli.main(["compare", "--rubric", str(files / "rubric.yaml"), "--a",
                     str(files / f"{a}.jsonl"), "--b", str(files / f"{b}.jsonl"), "--model",
                     "openai/fake-judge", "--api-base", fake.api_base, "--save", *extra])


def _rows(sessions) -> tuple[int, int, int, int]:
    with sessions() as session:
        return tuple(session.scalar(select(func.count()).select_from(t)) for t in (
            m.RubricRow, m.DatasetRow, m.ComparisonRow, m.ComparisonPairRow))


def test_save_stores_and_judges_the_comparison_and_a_taken_name_stores_nothing(
        files, fake_provider, sessions, capsys):
    assert _save(files, fake_provider) == 0

    out = capsys.readouterr().out
    assert "stored as comparison #1 (done): 2 of 2 pairs compared" in out
    assert "B win rate" in out
    [made] = comparisons.list_comparisons(sessions)
    assert (made.a_label, made.b_label, made.identical_count, made.unmatched_count) == (
        "old", "new", 1, 1)
    overall = comparisons.comparison_results(sessions, made.id).summary.overall
    assert (overall.wins, overall.losses) == (1, 1)
    assert fake_provider.requests == 2 * 2 * 2
    before = _rows(sessions)

    assert _save(files, fake_provider) == 2  # the same files again: their names are taken
    assert "already has a dataset named 'old'" in capsys.readouterr().err
    assert _rows(sessions) == before

    # Other names, the same rubric: the rubric is reused and every answer is cached.
    assert _save(files, fake_provider, "old2", "new2") == 0
    assert _rows(sessions) == (1, 4, 2, 2 * before[3])
    assert fake_provider.requests == 8


def test_a_rubric_of_the_same_name_with_other_criteria_stores_nothing(
        files, fake_provider, sessions, capsys):
    from grading.types import Criterion
    from tests.actors import ADMIN

    rubrics.create_rubric(sessions, "rubric", [Criterion(requirement="Other", weight=1)],
                          actor=ADMIN)

    assert _save(files, fake_provider) == 2

    assert "rubric named 'rubric' with other criteria" in capsys.readouterr().err
    assert _rows(sessions) == (1, 0, 0, 0)
    assert fake_provider.requests == 0


@pytest.mark.parametrize("extra", [["--out", "x.jsonl"], ["--model", "openai/other-judge"]],
                         ids=["with-out", "panel"])
def test_save_refuses_options_it_cannot_honour(files, fake_provider, sessions, capsys, extra):
    assert _save(files, fake_provider, "old", "new", *extra) == 2
    assert "--save" in capsys.readouterr().err
    assert _rows(sessions) == (0, 0, 0, 0)


@pytest.mark.parametrize(("extra", "said"), [
    (["--split-by", "model"], "no value in the column 'model'"),
    (["--columns", "a,b"], "--columns names the sources within one file")],
    ids=["split-by-without-the-column", "columns-of-two-files"])
def test_sources_that_cannot_be_read_store_nothing(files, fake_provider, sessions, capsys,
                                                   extra, said):
    """--split-by and --columns are saved too (test_cli_compare_save_sources.py); given
    files that do not fit them, the command says why and stores nothing."""
    assert _save(files, fake_provider, "old", "new", *extra) == 2
    assert said in capsys.readouterr().err
    assert _rows(sessions) == (0, 0, 0, 0)


def test_a_model_name_too_long_to_store_stores_nothing(files, fake_provider, sessions, capsys):
    status = cli.main(["compare", "--rubric", str(files / "rubric.yaml"), "--a",
                       str(files / "old.jsonl"), "--b", str(files / "new.jsonl"), "--model",
                       "openai/" + "x" * 400, "--api-base", fake_provider.api_base, "--save"])

    assert status == 2
    assert "nothing was stored" in capsys.readouterr().err
    assert _rows(sessions) == (0, 0, 0, 0)
