"""``rubric-workbench grade --calibrate K`` end to end against the fake provider."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from storage import cli
from storage import models as m
from storage.engine import open_database
from storage.services import calibration, datasets, reviews, rubrics, runs
from tests.actors import ADMIN
from tests.jobs.helpers import RUBRIC_YAML as RUBRIC


@pytest.fixture
def files(tmp_path):
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    (tmp_path / "r.jsonl").write_text("".join(
        json.dumps({"id": f"a{i}", "query": f"q{i}", "text": f"answer number {i}"}) + "\n"
        for i in range(8)))
    return tmp_path


def _grade(files, fake, *extra: str, grader: str = "per-criterion") -> int:
    return cli.main(["grade", "--rubric", str(files / "rubric.yaml"), "--responses",
                     str(files / "r.jsonl"), "--grader", grader, "--model",
                     "openai/fake-judge", "--api-base", fake.api_base, "--db",
                     f"sqlite:///{files / 'cli.db'}", *extra])


def _count(sessions, model) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(model))


def test_calibrate_without_reviewed_examples_is_refused_before_anything_is_stored(
        files, fake_provider, capsys):
    assert _grade(files, fake_provider, "--calibrate", "2") == 2
    err = capsys.readouterr().err
    assert "2 examples per criterion were asked for" in err
    assert "criterion 1 ('accurate'): 0 (0 MET, 0 UNMET)" in err
    assert "Traceback" not in err
    sessions = open_database(f"sqlite:///{files / 'cli.db'}")
    assert (_count(sessions, m.RubricRow), _count(sessions, m.DatasetRow),
            _count(sessions, m.RunRow)) == (0, 0, 0)
    assert fake_provider.requests == 0


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--calibrate", "0"], "from 1 to 20", id="zero"),
    pytest.param(["--calibration-seed", "3"], "needs --calibrate", id="seed-alone"),
])
def test_bad_calibration_arguments_are_refused(files, fake_provider, capsys, args, message):
    assert _grade(files, fake_provider, *args) == 2
    assert message in capsys.readouterr().err


def test_calibrate_with_the_holistic_grader_is_refused(files, fake_provider, capsys):
    assert _grade(files, fake_provider, "--calibrate", "2", grader="rubric-as-judge") == 2
    assert "per criterion" in capsys.readouterr().err


def test_calibrate_grades_with_reviewed_examples_records_them_and_exports_them(
        files, fake_provider, capsys):
    assert _grade(files, fake_provider) == 0
    sessions = open_database(f"sqlite:///{files / 'cli.db'}")
    [rubric] = rubrics.list_rubrics(sessions)
    version = rubrics.get_version(sessions, rubric.latest_version_id)
    [dataset] = datasets.list_datasets(sessions)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    for i, response in enumerate(responses[:5]):
        for c, criterion in enumerate(version.criteria):
            reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response.id,
                                      criterion_id=criterion.id,
                                      verdict="MET" if (i + c) % 2 else "UNMET")
    fake_provider.bodies.clear()
    out = files / "calibrated.jsonl"
    assert _grade(files, fake_provider, "--calibrate", "2", "--calibration-seed", "5",
                  "--out", str(out)) == 0
    calibrated = [r for r in runs.list_runs(sessions) if r.settings.calibration]
    assert [(r.settings.calibration.k, r.settings.calibration.seed) for r in calibrated] == [
        (2, 5)]
    run = calibrated[0]
    used = calibration.list_run_examples(sessions, run.id)
    assert len([e for e in used if e.role == "example"]) == 2 * 2
    assert all("The response to grade:" in b["messages"][-1]["content"]
               for b in fake_provider.bodies)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["calibration_k"], r["calibration_seed"]) for r in records} == {(2, 5)}
    assert {r["response_id"] for r in records if r["shown_as_example"]} == {
        e.response_label for e in used}
    # The same command again resumes that run: no new run, the same examples.
    assert _grade(files, fake_provider, "--calibrate", "2", "--calibration-seed", "5") == 0
    assert [r.id for r in runs.list_runs(sessions) if r.settings.calibration] == [run.id]
    assert calibration.list_run_examples(sessions, run.id) == used
    capsys.readouterr()
    assert cli.main(["export", "--kind", "examples", "--run", str(run.id), "--db",
                     f"sqlite:///{files / 'cli.db'}"]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["criterion"], e["response_id"], e["verdict"], e["role"]) for e in exported] == [
        (e.criterion_label, e.response_label, e.verdict, e.role) for e in used]


def test_a_calibrated_panel_names_its_k_and_seed_in_the_results_file(files, fake_provider):
    assert _grade(files, fake_provider) == 0
    sessions = open_database(f"sqlite:///{files / 'cli.db'}")
    [rubric] = rubrics.list_rubrics(sessions)
    version = rubrics.get_version(sessions, rubric.latest_version_id)
    [dataset] = datasets.list_datasets(sessions)
    for i, response in enumerate(datasets.list_responses(sessions, dataset.id, limit=None)[:4]):
        for criterion in version.criteria:
            reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response.id,
                                      criterion_id=criterion.id,
                                      verdict="MET" if i % 2 else "UNMET")
    out = files / "panel.jsonl"
    assert _grade(files, fake_provider, "--model", "openai/other-judge", "--panel", "majority",
                  "--calibrate", "1", "--calibration-seed", "7", "--out", str(out)) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    panel_rows = [r for r in records if r["grader"] == "panel"]
    assert len(panel_rows) == 8
    assert {(r["calibration_k"], r["calibration_seed"]) for r in records} == {(1, 7)}
