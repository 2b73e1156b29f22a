"""``rubric-workbench grade / worker / export`` end to end against the fake provider."""

from __future__ import annotations

import csv
import json

import pytest

from storage import cli
from storage.engine import open_database
from storage.services import runs
from tests.fake_provider import judge_reply
from tests.jobs.helpers import RUBRIC_YAML as RUBRIC


@pytest.fixture
def files(tmp_path):
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    return tmp_path


def _grade(files, fake, responses: str, *extra: str) -> int:
    return cli.main(["grade", "--rubric", str(files / "rubric.yaml"), "--responses",
                     str(files / responses), "--grader", "per-criterion", "--model",
                     "openai/fake-judge", "--api-base", fake.api_base, "--db",
                     f"sqlite:///{files / 'cli.db'}", *extra])


@pytest.mark.parametrize(("name", "content"), [
    pytest.param("r.csv", 'id,query,text\na,q1,first answer\nb,q2,"second, answer"\n', id="csv"),
    pytest.param("r.jsonl", '{"id": "a", "query": "q1", "text": "first answer"}\n'
                            '{"id": "b", "query": "q2", "text": "second, answer"}\n', id="jsonl"),
    pytest.param("r.json", '[{"id": "a", "prompt": "q1", "output": "first answer"},'
                           ' {"id": "b", "prompt": "q2", "output": "second, answer"}]',
                 id="json"),
])
def test_grade_reads_each_format_and_writes_jsonl(files, fake_provider, capsys, name, content):
    (files / name).write_text(content)
    out = files / "results.jsonl"

    status = _grade(files, fake_provider, name, "--out", str(out))

    assert status == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["response_id"] for r in records] == ["a", "b"]
    assert all(r["score"] == pytest.approx(0.5) and r["grader"] == "per_criterion"
               for r in records)
    assert [c["name"] for c in records[0]["criteria"]] == ["accurate", "harmful"]
    prompts = [b["messages"][-1]["content"] for b in fake_provider.bodies]
    assert any("second, answer" in p and "q2" in p for p in prompts)
    summary = capsys.readouterr().out
    assert "done" in summary and "export --run" in summary


def test_grade_with_named_columns_several_graders_and_models_writes_csv(files, fake_provider):
    (files / "r.csv").write_text("key,ask,answer_text,why,notes\nx1,q,the answer,I think,n\n")
    out = files / "results.csv"

    status = cli.main([
        "grade", "--rubric", str(files / "rubric.yaml"), "--responses", str(files / "r.csv"),
        "--grader", "per-criterion", "--grader", "one-shot", "--grader", "rubric-as-judge",
        "--model", "openai/judge-a", "--model", "openai/judge-b",
        "--api-base", fake_provider.api_base, "--db", f"sqlite:///{files / 'cli.db'}",
        "--text-column", "answer_text", "--query-column", "ask", "--id-column", "key",
        "--thinking-column", "why", "--concurrency", "4", "--out", str(out)])

    assert status == 0
    prompt = fake_provider.bodies[0]["messages"][-1]["content"]
    assert "<query>\nq\n</query>" in prompt and "<thinking>\nI think\n</thinking>" in prompt
    rows = list(csv.DictReader(out.open(newline="")))
    assert len(rows) == 6  # 1 response x 3 graders x 2 models
    assert {(r["grader"], r["model"]) for r in rows} == {
        (g, m) for g in ("per_criterion", "one_shot", "rubric_as_judge")
        for m in ("openai/judge-a", "openai/judge-b")}
    assert {r["response_id"] for r in rows} == {"x1"}
    holistic = next(r for r in rows if r["grader"] == "rubric_as_judge")
    assert float(holistic["score"]) == pytest.approx(0.8)
    assert holistic["accurate.judge_verdict"] == ""  # a holistic judge gives no verdicts
    per = next(r for r in rows if r["grader"] == "per_criterion")
    assert per["accurate.judge_verdict"] == "MET" and per["harmful.effective_verdict"] == "MET"


def test_failed_grades_make_the_exit_status_non_zero(files, fake_provider, capsys):
    (files / "r.csv").write_text("text\ngood answer\nbad answer\n")
    fake_provider.default = lambda body: (
        "not json" if "bad answer" in body["messages"][-1]["content"] else judge_reply(body))
    assert _grade(files, fake_provider, "r.csv", "--no-cache") == 1
    out = capsys.readouterr().out
    assert " 1 " in out.splitlines()[1]  # the failed column of the summary


def test_a_rerun_of_the_same_files_is_answered_from_the_cache(files, fake_provider, capsys):
    (files / "r.csv").write_text("text\none\ntwo\n")
    assert _grade(files, fake_provider, "r.csv") == 0
    assert fake_provider.requests == 4
    # The same command resumes the same (finished) run: nothing new (issue 10.7).
    assert _grade(files, fake_provider, "r.csv") == 0
    assert fake_provider.requests == 4
    assert "resuming run(s) 1" in capsys.readouterr().err
    # Other settings make another run of the same dataset, answered from the cache.
    assert _grade(files, fake_provider, "r.csv", "--concurrency", "3") == 0
    assert fake_provider.requests == 4
    last_line = capsys.readouterr().out.strip().splitlines()[-2]
    assert last_line.split()[-1] == "4"  # 4 cache hits
    # The same rubric file reuses its rubric version; the same content its dataset.
    sessions = open_database(f"sqlite:///{files / 'cli.db'}")
    assert len({r.rubric_version_id for r in runs.list_runs(sessions)}) == 1
    assert len({r.dataset_id for r in runs.list_runs(sessions)}) == 1
    assert len(runs.list_runs(sessions)) == 2


def test_no_cache_calls_the_provider_again(files, fake_provider):
    (files / "r.csv").write_text("text\none\n")
    assert _grade(files, fake_provider, "r.csv") == 0
    assert _grade(files, fake_provider, "r.csv", "--no-cache") == 0
    assert fake_provider.requests == 4


@pytest.mark.parametrize(("name", "content", "where"), [
    pytest.param("bad.csv", "id,text\na,one\nb,two,extra\n", "row 2 (line 3)", id="csv-values"),
    pytest.param("bad.csv", "id,query\na,q\n", "column 'text' not found", id="csv-no-text"),
    pytest.param("bad.jsonl", '{"text": "one"}\n{"text": "two"\n', "line 2, column 15",
                 id="jsonl"),
    pytest.param("bad.json", '[{"text": "one"},\n {"text": }]', "line 2, column 11", id="json"),
    pytest.param("bad.jsonl", '{"text": "one"}\n{"text": ""}\n', "line 2", id="jsonl-empty"),
])
def test_a_bad_responses_file_is_reported_with_its_location(files, fake_provider, capsys,
                                                             name, content, where):
    (files / name).write_text(content)
    assert _grade(files, fake_provider, name) == 2
    err = capsys.readouterr().err
    assert where in err and "Traceback" not in err and err.startswith("error: ")
    assert fake_provider.requests == 0
    assert not (files / "cli.db").exists()  # nothing was written


def test_a_bad_rubric_file_is_reported_with_line_and_column(files, fake_provider, capsys):
    (files / "rubric.yaml").write_text("- name: a\n  requirement: [unclosed\n")
    (files / "r.csv").write_text("text\none\n")
    assert _grade(files, fake_provider, "r.csv") == 2
    err = capsys.readouterr().err
    assert "line 3, column 1" in err and "Traceback" not in err


def test_a_missing_file_is_reported(files, fake_provider, capsys):
    assert _grade(files, fake_provider, "nowhere.csv") == 2
    assert "nowhere.csv: cannot read the file" in capsys.readouterr().err


def test_missing_credentials_are_reported_before_grading(files, monkeypatch, capsys):
    monkeypatch.delenv("RUBRIC_WORKBENCH_API_KEY")
    (files / "r.csv").write_text("text\none\n")
    status = cli.main(["grade", "--rubric", str(files / "rubric.yaml"), "--responses",
                       str(files / "r.csv"), "--grader", "one-shot", "--model",
                       "openai/gpt-4.1-mini", "--db", f"sqlite:///{files / 'cli.db'}"])
    assert status == 1
    assert "OPENAI_API_KEY" in capsys.readouterr().err


def test_export_writes_the_runs_of_a_grade(files, fake_provider, capsys):
    (files / "r.csv").write_text("id,text\na,one\n")
    assert _grade(files, fake_provider, "r.csv") == 0
    capsys.readouterr()
    db = f"sqlite:///{files / 'cli.db'}"
    assert cli.main(["export", "--run", "1", "--db", db]) == 0
    [record] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (record["run_id"], record["response_id"]) == (1, "a")
    out = files / "e.csv"
    assert cli.main(["export", "--run", "1", "--db", db, "--out", str(out)]) == 0
    assert next(csv.DictReader(out.open()))["accurate.judge_verdict"] == "MET"
    assert cli.main(["export", "--db", db]) == 2
    assert cli.main(["export", "--run", "99", "--db", db]) == 1
    assert "run 99 does not exist" in capsys.readouterr().err


def test_grade_next_to_a_running_worker_never_grades_a_response_twice(files, fake_provider):
    from collections import Counter

    from storage.jobs import start_in_process_worker, stop_in_process_workers

    (files / "r.csv").write_text("text\nfirst answer\nsecond answer\nthird answer\n")
    db = f"sqlite:///{files / 'cli.db'}"
    fake_provider.latency = 0.05
    try:
        start_in_process_worker(db, poll_interval=0.01)
        status = cli.main([
            "grade", "--rubric", str(files / "rubric.yaml"), "--responses",
            str(files / "r.csv"), "--grader", "per-criterion", "--grader", "one-shot",
            "--model", "openai/judge-a", "--model", "openai/judge-b", "--api-base",
            fake_provider.api_base, "--db", db, "--no-cache"])
    finally:
        stop_in_process_workers()
    assert status == 0
    asked = Counter(
        (b["model"], b["response_format"]["json_schema"]["name"],
         b["messages"][-1]["content"].split("<response>\n")[1].split("\n")[0])
        for b in fake_provider.bodies)
    per_criterion = {k: v for k, v in asked.items() if k[1] == "criterion_verdict"}
    one_shot = {k: v for k, v in asked.items() if k[1] == "criteria_verdicts"}
    assert len(per_criterion) == len(one_shot) == 6  # 2 models x 3 responses
    assert set(per_criterion.values()) == {2} and set(one_shot.values()) == {1}


def test_ctrl_c_while_the_inputs_are_read_ends_the_command_with_one_line(
        files, fake_provider, capsys, monkeypatch):
    # Before any helper or run exists (a large responses file being read): no traceback.
    from storage.jobs import commands

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "read_inputs", interrupted)
    (files / "r.csv").write_text("id,text\na,first answer\n")
    try:
        status = _grade(files, fake_provider, "r.csv")
    except KeyboardInterrupt:
        pytest.fail("the interrupt left the command as a traceback")
    assert status == 130
    assert capsys.readouterr().err.strip() == "interrupted"
    assert fake_provider.requests == 0
