"""A CLI run with the one-shot grader whose judge leaves a criterion out: the grade is
completed by a per-criterion call and stored complete, with the note in its reason."""

from __future__ import annotations

import json

from sqlalchemy import select

from storage import cli
from storage import models as m
from storage.engine import open_database
from tests.fake_provider import Reply, judge_reply
from tests.jobs.helpers import RUBRIC_YAML


def test_a_cli_one_shot_run_stores_a_complete_grade_and_says_how(tmp_path, fake_provider):
    (tmp_path / "rubric.yaml").write_text(RUBRIC_YAML)
    (tmp_path / "r.jsonl").write_text(json.dumps({"id": "a", "text": "Take 200 mg."}) + "\n")

    def reply(body):
        schema = ((body.get("response_format") or {}).get("json_schema") or {})
        if schema.get("name") == "criteria_verdicts":
            return Reply(json.dumps({"criteria": [
                {"number": 1, "reason": "the dose is right", "verdict": "MET"}]}))
        return judge_reply(body)
    fake_provider.default = reply
    db = f"sqlite:///{tmp_path / 'cli.db'}"

    status = cli.main(["grade", "--rubric", str(tmp_path / "rubric.yaml"), "--responses",
                       str(tmp_path / "r.jsonl"), "--grader", "one-shot", "--model",
                       "openai/fake-judge", "--api-base", fake_provider.api_base, "--db", db])

    assert status == 0
    with open_database(db)() as session:
        [grade] = session.scalars(select(m.GradeRow)).all()
        verdicts = [(c.verdict, c.reason) for c in grade.criteria]
    assert grade.error is None and grade.score is not None
    assert verdicts == [("MET", "the dose is right"), ("MET", "the response does this")]
    assert "left out criterion number(s) 2 of 2" in grade.reason
    assert fake_provider.requests == 2  # the one-shot call and one for criterion 2
