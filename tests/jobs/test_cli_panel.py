"""``rubric-workbench grade --model a --model b --model c --panel RULE`` against the fake
provider over litellm's HTTP path: every model grades, the panel is persisted (the app shows
it) and its record per response is written beside the members'."""

from __future__ import annotations

import csv
import json

import pytest

from grading.types import Verdict
from storage import cli
from storage.engine import open_database
from storage.services import panels, runs
from tests.fake_provider import Reply, judge_reply
from tests.jobs.helpers import RUBRIC_YAML as RUBRIC

RESPONSES = "id,text\nr0,first answer\nr1,second answer\n"
MODELS = ("openai/judge-a", "openai/judge-b", "openai/judge-c")


def three_judges(body):
    """judge-a and judge-b say UNMET on 'accurate' for r1; judge-c never answers usably (its
    grades fail: an abstention). Everything else is MET."""
    prompt = body["messages"][-1]["content"]
    if body["model"] == "judge-c":
        return Reply("this is not JSON")
    if "second answer" in prompt and "States the dose" in prompt:
        return Reply(json.dumps({"verdict": "UNMET", "reason": "no dose"}))
    return judge_reply(body)


@pytest.fixture
def files(tmp_path, fake_provider):
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    (tmp_path / "r.csv").write_text(RESPONSES)
    fake_provider.default = three_judges
    return tmp_path


def _grade(files, fake, db_url, *extra: str, models=MODELS, grader="per-criterion") -> int:
    args = ["grade", "--rubric", str(files / "rubric.yaml"), "--responses",
            str(files / "r.csv"), "--grader", grader, "--api-base", fake.api_base,
            "--db", db_url]
    for model in models:
        args += ["--model", model]
    return cli.main([*args, *extra])


def test_grade_as_a_majority_panel_writes_the_panel_beside_its_members(
        files, fake_provider, db_url, capsys):
    out = files / "results.jsonl"
    status = _grade(files, fake_provider, db_url, "--panel", "majority", "--out", str(out))

    assert status == 1  # judge-c's grades failed, and the command says so
    records = [json.loads(line) for line in out.read_text().splitlines()]
    members = [r for r in records if r["grader"] == "per_criterion"]
    panel_rows = [r for r in records if r["grader"] == "panel"]
    assert len(members) == 6 and len(panel_rows) == 2
    by_response = {r["response_id"]: r for r in panel_rows}
    r0, r1 = by_response["r0"], by_response["r1"]
    # r0: a and b say MET on both; c abstains (failed) and stays in the denominator: 2 of 3
    assert [c["judge_verdict"] for c in r0["criteria"]] == ["MET", "MET"]
    assert r0["score"] == pytest.approx(0.5)  # 10 earned, 5 lost, over 10
    # r1: a and b say UNMET on 'accurate': the majority, even with c failed
    assert [c["judge_verdict"] for c in r1["criteria"]] == ["UNMET", "MET"]
    assert "majority UNMET" in r1["criteria"][0]["reason"]
    assert r1["score"] == pytest.approx(0.0)

    # Persisted: the app lists the panel over the three runs
    sessions = open_database(db_url)
    [panel] = panels.list_panels(sessions)
    assert panel.rule == "majority"
    assert [m.run.model for m in panel.members] == list(MODELS)
    a, b, c = (m.run.id for m in panel.members)
    assert r0["model"] == f"majority of #{a} {MODELS[0]}, #{b} {MODELS[1]}, #{c} {MODELS[2]}"
    assert r0["panel_id"] == panel.id and r0["member_runs"] == f"{a} {b} {c}"
    assert r0["criteria"][0]["members"] == f"#{a}:MET #{b}:MET #{c}:failed"
    stdout = capsys.readouterr().out
    assert f"judge panel {panel.id}: majority of runs" in stdout

    # The same command again resumes the same runs and finds the same panel: no copy
    calls = fake_provider.requests
    _grade(files, fake_provider, db_url, "--panel", "majority")
    assert [p.id for p in panels.list_panels(sessions)] == [panel.id]
    assert len(runs.list_runs(sessions)) == 3
    # only judge-c's failed grades are asked again
    assert {b["model"] for b in fake_provider.bodies[calls:]} <= {"judge-c"}


def test_weighted_panel_with_two_workers_writes_csv(files, fake_provider, db_url, capsys):
    out = files / "results.csv"
    status = _grade(files, fake_provider, db_url, "--panel", "weighted",
                    "--panel-weight", "openai/judge-a=1", "--panel-weight", "openai/judge-b=1",
                    "--panel-weight", "openai/judge-c=3", "--workers", "2", "--out", str(out),
                    models=MODELS)
    assert status == 1, capsys.readouterr().err
    rows = list(csv.DictReader(out.open(newline="")))
    panel_rows = {r["response_id"]: r for r in rows if r["grader"] == "panel"}
    assert len(rows) == 8 and set(panel_rows) == {"r0", "r1"}
    # c holds 3 of 5 weight and abstains: neither side has more than half, no tie
    assert panel_rows["r0"]["accurate.judge_verdict"] == "CANNOT_ASSESS"
    assert "the panel abstains" in panel_rows["r0"]["accurate.reason"]
    sessions = open_database(db_url)
    [panel] = panels.list_panels(sessions)
    assert [m.weight for m in panel.members] == [1.0, 1.0, 3.0]
    grades = panels.panel_grades(sessions, panel.id)
    assert {c.decision.verdict for g in grades for c in g.criteria} == {Verdict.CANNOT_ASSESS}


@pytest.mark.parametrize(("extra", "models", "grader", "message"), [
    pytest.param(("--panel", "majority"), MODELS[:1], "per-criterion",
                 "needs at least two different --model", id="one-model"),
    pytest.param(("--panel", "majority"), (MODELS[0], MODELS[0]), "per-criterion",
                 "needs at least two different --model", id="same-model-twice"),
    pytest.param(("--panel", "any"), MODELS, "rubric-as-judge",
                 "cannot use --grader rubric-as-judge", id="holistic"),
    pytest.param(("--panel", "weighted", "--panel-weight", "openai/judge-a=2"), MODELS,
                 "per-criterion", "missing: openai/judge-b=WEIGHT", id="weight-missing"),
    pytest.param(("--panel", "weighted", "--panel-weight", "openai/judge-a=-1"), MODELS,
                 "per-criterion", "must be a positive number", id="negative-weight"),
    pytest.param(("--panel", "weighted", "--panel-weight", "openai/other=1"), MODELS,
                 "per-criterion", "not one of the --model values", id="unknown-model"),
    pytest.param(("--panel", "majority", "--panel-weight", "openai/judge-a=2"), MODELS,
                 "per-criterion", "only for --panel weighted", id="weight-without-weighted"),
    pytest.param(("--panel-weight", "openai/judge-a=2"), MODELS, "per-criterion",
                 "only for --panel weighted", id="weight-without-panel"),
])
def test_bad_panel_arguments_are_refused_before_anything_is_written(
        files, fake_provider, tmp_path, capsys, extra, models, grader, message):
    db = tmp_path / "never.db"
    status = _grade(files, fake_provider, f"sqlite:///{db}", *extra, "--out",
                    str(tmp_path / "out.jsonl"), models=models, grader=grader)
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not db.exists() and not (tmp_path / "out.jsonl").exists()
    assert fake_provider.requests == 0


def test_two_graders_make_one_panel_each(files, fake_provider, db_url, capsys):
    fake_provider.default = judge_reply
    status = cli.main(["grade", "--rubric", str(files / "rubric.yaml"), "--responses",
                       str(files / "r.csv"), "--grader", "per-criterion", "--grader", "one-shot",
                       "--model", MODELS[0], "--model", MODELS[1], "--api-base",
                       fake_provider.api_base, "--db", db_url, "--panel", "unanimous"])
    assert status == 0, capsys.readouterr().err
    sessions = open_database(db_url)
    made = panels.list_panels(sessions)
    assert [[(m.run.grader, m.run.model) for m in p.members] for p in made] == [
        [("per_criterion", MODELS[0]), ("per_criterion", MODELS[1])],
        [("one_shot", MODELS[0]), ("one_shot", MODELS[1])]]
    assert all(g.score is not None for p in made for g in panels.panel_grades(sessions, p.id))


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_grade_out_writes_the_panel_exactly_as_the_results_export_does(
        files, fake_provider, db_url, capsys, fmt):
    """One shape for a panel's record in a results file: ``grade --out`` holds what
    ``export --run ... --panel P`` writes (the CSV too: panel_id, member_runs, members)."""
    out = files / f"graded.{fmt}"
    _grade(files, fake_provider, db_url, "--panel", "majority", "--out", str(out))
    sessions = open_database(db_url)
    [panel] = panels.list_panels(sessions)
    member_ids = [m.run.id for m in panel.members]
    exported = files / f"exported.{fmt}"
    args = ["export", "--db", db_url, "--out", str(exported), "--panel", str(panel.id)]
    for run_id in member_ids:
        args += ["--run", str(run_id)]
    assert cli.main(args) == 0, capsys.readouterr().err
    assert out.read_text() == exported.read_text()
    if fmt == "csv":
        rows = [r for r in csv.DictReader(out.open(newline="")) if r["grader"] == "panel"]
        members = " ".join(f"#{run_id}:{v}" for run_id, v in
                           zip(member_ids, ["UNMET", "UNMET", "failed"], strict=True))
        r1 = next(r for r in rows if r["response_id"] == "r1")
        assert (r1["panel_id"], r1["member_runs"]) == (str(panel.id),
                                                       " ".join(map(str, member_ids)))
        assert r1["accurate.members"] == members and r1["accurate.judge_verdict"] == "UNMET"
