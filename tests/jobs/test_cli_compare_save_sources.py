"""``rubric-workbench compare --save`` for every source form: three or more --source files
(one comparison per two, and the leaderboard), one file --split-by a column, one file's
--columns; all written in one transaction, so a name taken on the last source, or a file
name too long to store, leaves nothing behind. SQLite and PostgreSQL, judged over litellm
against the fake provider."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from storage import cli
from storage import models as m
from storage.services import comparisons, datasets
from tests.actors import ADMIN
from tests.jobs.test_cli_compare_save import RUBRIC, _rows

ROWS = {"v1": ["a", "b c", "d"], "v2": ["a b", "b c d", "d e"], "v3": ["a b c", "b", "d e f"]}


def _jsonl(rows) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


@pytest.fixture
def files(tmp_path, monkeypatch, db_url):
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATABASE_URL", db_url)
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    for name, texts in ROWS.items():
        (tmp_path / f"{name}.jsonl").write_text(_jsonl(
            {"id": f"q{n}", "query": f"Q{n}?", "text": t} for n, t in enumerate(texts)))
    (tmp_path / "all.jsonl").write_text(_jsonl(
        {"id": f"q{n}", "query": f"Q{n}?", "text": t, "model": name}
        for name in ("v1", "v2") for n, t in enumerate(ROWS[name])))
    (tmp_path / "side.jsonl").write_text(_jsonl(
        {"id": f"q{n}", "query": f"Q{n}?", "before": a, "after": b}
        for n, (a, b) in enumerate(zip(ROWS["v1"], ROWS["v3"], strict=True))))
    return tmp_path


def _compare(files, fake, *sources: str) -> int:
    return cli.main(["compare", "--rubric", str(files / "rubric.yaml"), *sources,
                     "--model", "openai/fake-judge", "--api-base", fake.api_base, "--save"])


def _dataset_names(sessions) -> list[str]:
    return sorted(d.name for d in datasets.list_datasets(sessions, include_archived=True))


def test_three_sources_are_stored_as_three_comparisons_and_ranked(
        files, fake_provider, sessions, capsys):
    status = _compare(files, fake_provider, "--source", f"first={files / 'v1.jsonl'}",
                      "--source", str(files / "v2.jsonl"), "--source", str(files / "v3.jsonl"))

    assert status == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert _dataset_names(sessions) == ["first", "v2", "v3"]
    made = comparisons.list_comparisons(sessions)
    assert sorted((c.a_label, c.b_label, c.status, c.done_count) for c in made) == [
        ("first", "v2", "done", 3), ("first", "v3", "done", 3), ("v2", "v3", "done", 3)]
    assert out.count("stored as comparison #") == 3
    assert "leaderboard" in out.lower() and "first" in out.lower().split("leaderboard")[-1]


def test_one_file_split_by_a_column_is_stored_per_value(files, fake_provider, sessions,
                                                         capsys):
    status = _compare(files, fake_provider, "--a", str(files / "all.jsonl"),
                      "--split-by", "model")

    assert status == 0, capsys.readouterr().err
    assert _dataset_names(sessions) == ["all · model = v1", "all · model = v2"]
    [made] = comparisons.list_comparisons(sessions)
    assert (made.a_label, made.b_label, made.status, made.done_count) == (
        "all · model = v1", "all · model = v2", "done", 3)
    overall = comparisons.comparison_results(sessions, made.id).summary.overall
    assert (overall.wins, overall.losses) == (3, 0)  # v2 says more on every row


def test_one_files_columns_are_stored_per_column(files, fake_provider, sessions, capsys):
    status = _compare(files, fake_provider, "--a", str(files / "side.jsonl"),
                      "--columns", "before,after")

    assert status == 0, capsys.readouterr().err
    assert _dataset_names(sessions) == ["side · after", "side · before"]
    [made] = comparisons.list_comparisons(sessions)
    assert (made.a_label, made.b_label, made.match_by, made.done_count) == (
        "side · before", "side · after", "id", 3)


def test_a_name_taken_by_the_last_source_stores_nothing(files, fake_provider, sessions,
                                                         capsys):
    datasets.create_dataset(sessions, "v3", actor=ADMIN)

    status = _compare(files, fake_provider, "--source", str(files / "v1.jsonl"),
                      "--source", str(files / "v2.jsonl"), "--source", str(files / "v3.jsonl"))

    assert status == 2
    err = capsys.readouterr().err
    assert "already has a dataset named 'v3'" in err and "nothing was stored" in err
    assert _rows(sessions) == (0, 1, 0, 0)  # only the dataset that was there
    assert fake_provider.requests == 0


def test_a_file_name_too_long_to_store_leaves_no_rubric_or_first_dataset(
        files, fake_provider, sessions, capsys):
    long = files / ("b" * 230 + ".jsonl")
    long.write_text((files / "v2.jsonl").read_text())

    status = _compare(files, fake_provider, "--a", str(files / "v1.jsonl"), "--b", str(long))

    assert status == 2
    assert "nothing was stored" in capsys.readouterr().err
    assert _rows(sessions) == (0, 0, 0, 0)
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(m.ResponseRow)) == 0
