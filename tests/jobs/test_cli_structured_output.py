"""``grade`` against servers that refuse OpenAI's json_schema option (llama-cpp-python's)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from storage import cli
from storage import models as m
from storage.engine import open_database
from tests.jobs.helpers import RUBRIC_YAML

RESPONSES = "".join(json.dumps({"id": f"r{i}", "query": "How much?", "text": f"Take {i} mg"})
                    + "\n" for i in range(4))


@pytest.fixture
def files(tmp_path):
    (tmp_path / "rubric.yaml").write_text(RUBRIC_YAML)
    (tmp_path / "r.jsonl").write_text(RESPONSES)
    return tmp_path


def _grade(files, fake, *extra: str) -> int:
    return cli.main(["grade", "--rubric", str(files / "rubric.yaml"), "--responses",
                     str(files / "r.jsonl"), "--grader", "per-criterion", "--model",
                     "openai/local-judge", "--api-base", fake.api_base, "--db",
                     f"sqlite:///{files / 'cli.db'}", *extra])


def _run_settings(files) -> dict:
    sessions = open_database(f"sqlite:///{files / 'cli.db'}")
    with sessions() as session:
        return session.scalars(select(m.RunRow.settings)).one()


def test_a_server_refusing_json_schema_grades_everything_with_one_probe(files, fake_provider):
    fake_provider.accepted_formats = {"json_object"}  # HTTP 500 to json_schema
    assert _grade(files, fake_provider) == 0
    kinds = [(b.get("response_format") or {}).get("type") for b in fake_provider.bodies]
    # 4 responses x 2 criteria = 8 verdicts, plus the one refused probe
    assert fake_provider.requests == 9
    assert kinds.count("json_schema") == 1
    assert kinds.count("json_object") == 8
    sessions = open_database(f"sqlite:///{files / 'cli.db'}")
    with sessions() as session:
        grades = session.scalars(select(m.GradeRow)).all()
        assert len(grades) == 4
        assert all(g.error is None and g.score is not None for g in grades)


def test_structured_output_off_sends_no_response_format_and_is_kept_with_the_run(
        files, fake_provider):
    assert _grade(files, fake_provider, "--structured-output", "off") == 0
    assert all("response_format" not in b for b in fake_provider.bodies)
    assert _run_settings(files)["extra"]["structured_output"] == "off"


def test_the_default_auto_is_not_stored_so_earlier_runs_stay_the_same_run(files,
                                                                          fake_provider):
    assert _grade(files, fake_provider) == 0
    assert "structured_output" not in _run_settings(files)["extra"]


def test_an_unknown_mode_is_refused_with_the_choices(files, fake_provider, capsys):
    with pytest.raises(SystemExit) as exit_:
        _grade(files, fake_provider, "--structured-output", "yaml")
    assert exit_.value.code == 2
    assert "json_object" in capsys.readouterr().err
    assert fake_provider.requests == 0
