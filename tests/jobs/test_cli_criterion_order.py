"""``rubric-workbench grade --grader one-shot --shuffle-criteria``: each response's one-shot
prompt lists the criteria in its own order, recorded with the run's grades; with another
grader the flag is refused before anything is stored."""

from __future__ import annotations

import json
import re

from storage import cli
from storage.engine import open_database
from storage.services import runs
from tests.jobs.test_cli import files

__all__ = ["files"]


def _grade(files, fake, *extra: str, grader: str = "one-shot") -> int:
    return cli.main(["grade", "--rubric", str(files / "rubric.yaml"), "--responses",
                     str(files / "r.csv"), "--grader", grader, "--model",
                     "openai/fake-judge", "--api-base", fake.api_base, "--db",
                     f"sqlite:///{files / 'cli.db'}", *extra])


def test_shuffle_criteria_records_the_order_each_response_saw(files, fake_provider):
    (files / "r.csv").write_text("text\n" + "".join(f"answer {i}\n" for i in range(6)))

    def by_requirement(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        numbers = re.findall(r'<criterion number="(\d+)"[^>]*>\n(.+)\n', prompt)
        return json.dumps({"criteria": [
            {"number": int(n), "reason": "r", "verdict": "MET" if "dose" in text else "UNMET"}
            for n, text in numbers]})

    fake_provider.default = by_requirement
    assert _grade(files, fake_provider, "--shuffle-criteria") == 0
    sessions = open_database(f"sqlite:///{files / 'cli.db'}")
    [run] = runs.list_runs(sessions)
    assert run.settings.shuffle_criteria
    version_criteria = {c.criterion_id for g in runs.list_grades(sessions, run.id)
                        for c in g.criteria}
    assert len(version_criteria) >= 2
    orders = set()
    for grade in runs.list_grades(sessions, run.id):
        orders.add(tuple(c.prompt_position for c in grade.criteria))
        assert sorted(c.prompt_position for c in grade.criteria) == list(
            range(1, len(grade.criteria) + 1))
    assert len(orders) > 1  # not every response saw the rubric's order
    # the judge answered by content: the verdicts are the same on every grade
    assert len({tuple(c.verdict for c in g.criteria)
                for g in runs.list_grades(sessions, run.id)}) == 1


def test_shuffle_criteria_with_another_grader_is_refused_before_anything_is_stored(
        files, fake_provider, capsys):
    (files / "r.csv").write_text("text\none\n")
    assert _grade(files, fake_provider, "--shuffle-criteria", grader="per-criterion") == 2
    assert "--shuffle-criteria needs --grader one-shot only" in capsys.readouterr().err
    assert runs.list_runs(open_database(f"sqlite:///{files / 'cli.db'}")) == []
    assert fake_provider.requests == 0
