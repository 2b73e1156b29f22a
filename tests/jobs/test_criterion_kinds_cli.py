"""``rubric-workbench grade --reference-column`` and the exports of a rubric mixing kinds, on
SQLite and PostgreSQL: the reference reaches the judge and the export, option labels are
exported and imported back from a verdict sheet, and bad input names what is wrong with
nothing written."""

from __future__ import annotations

import csv
import io
import json

from sqlalchemy import func, select

from storage import models as m
from storage.engine import open_database
from storage.exports import results_export
from storage.label_commands import import_verdicts
from storage.services import datasets, reviews, rubrics, runs
from storage.services.verdict_sheet import export_verdict_sheet_csv
from tests.jobs.helpers import grade_by_cli

RUBRIC = """\
- name: accurate
  requirement: States the dose correctly
  weight: 10
  required: true
- name: clarity
  requirement: How clear is the answer?
  weight: 5
  options:
    - {label: Poor, value: 0}
    - {label: Fair, value: 0.5}
    - {label: Good, value: 1}
"""
RESPONSES = ("id,question,response,solution\n"
             "a,How much?,answer number 0: 5 mg,Take 5 mg twice a day.\n"
             "b,How much?,answer number 1: some,\n")


def _grade(tmp_path, fake, db_url, *extra: str) -> int:
    return grade_by_cli(tmp_path, fake, *extra, rubric=RUBRIC, responses=RESPONSES,
                        db_url=db_url)


def _count(db_url, table) -> int:
    sessions = open_database(db_url)
    with sessions() as session:
        found = session.scalar(select(func.count()).select_from(table))
    sessions.kw["bind"].dispose()
    return found


def test_grade_shows_the_reference_column_to_the_judge_and_exports_it(
        tmp_path, fake_provider, db_url):
    out = tmp_path / "out.jsonl"
    assert _grade(tmp_path, fake_provider, db_url, "--reference-column", "solution",
                  "--out", str(out)) == 0
    for body in fake_provider.bodies:
        prompt = body["messages"][-1]["content"]
        if "answer number 0" in prompt:
            assert "<reference_answer>" in prompt and "Take 5 mg twice a day." in prompt
        else:
            assert "reference_answer" not in prompt
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["response_id"], r["reference"], "solution" in r["upload"]) for r in records] == [
        ("a", "Take 5 mg twice a day.", False), ("b", None, False)]
    # the fake judge picks the first option listed: the label is exported as the verdict
    assert [[c["judge_verdict"] for c in r["criteria"]] for r in records] == [
        ["MET", "Poor"], ["MET", "Poor"]]
    assert [r["score"] for r in records] == [10 / 15, 10 / 15]

    sessions = open_database(db_url)
    [run] = runs.list_runs(sessions)
    rows = list(csv.DictReader(io.StringIO(results_export(sessions, [run.id], "csv"))))
    assert [(r["reference"], r["clarity.judge_verdict"]) for r in rows] == [
        ("Take 5 mg twice a day.", "Poor"), ("", "Poor")]
    sessions.kw["bind"].dispose()


def test_an_unknown_reference_column_is_a_message_and_nothing_is_written(
        tmp_path, fake_provider, db_url, capsys):
    assert _grade(tmp_path, fake_provider, db_url, "--reference-column", "gold") == 2
    err = capsys.readouterr().err
    assert "--reference-column 'gold' is not a column of the file" in err
    assert "'solution'" in err and "Traceback" not in err
    assert (_count(db_url, m.RubricRow), _count(db_url, m.ResponseRow)) == (0, 0)
    assert fake_provider.requests == 0


def test_the_reference_column_cannot_also_be_the_response(tmp_path, fake_provider, db_url,
                                                         capsys):
    assert _grade(tmp_path, fake_provider, db_url, "--reference-column", "response",
                  "--text-column", "response") == 2
    assert "cannot be both the reference (--reference-column) and text" in (
        capsys.readouterr().err)
    assert _count(db_url, m.ResponseRow) == 0


def test_a_verdict_sheet_round_trips_option_labels_and_refuses_unknown_ones(
        tmp_path, fake_provider, db_url, capsys):
    assert _grade(tmp_path, fake_provider, db_url, "--reference-column", "solution",
                  "--name", "first") == 0
    sessions = open_database(db_url)
    [rubric] = rubrics.list_rubrics(sessions)
    [dataset] = datasets.list_datasets(sessions)
    version = rubrics.get_version(sessions, rubric.latest_version_id)
    clarity = version.criteria[1]
    sheet = tmp_path / "sheet.csv"
    head = "response_id,criterion,verdict,reviewer,note\n"

    sheet.write_text(head + "a,clarity,good,ann,clear enough\n"
                            "b,clarity,Superb,ann,\n"
                            "b,accurate,Fair,ann,\n")
    args = {"rubric": rubric.name, "dataset": dataset.name, "db": db_url,
            "create_reviewers": True}
    assert import_verdicts(str(sheet), **args) == 1
    err = capsys.readouterr().err
    assert ("row 2 (line 3), column 'verdict': criterion 'clarity' is answered by choosing "
            "one of its options ('Poor', 'Fair', 'Good'), or CANNOT_ASSESS; 'Superb' is not "
            "one of them") in err
    assert "row 3 (line 4), column 'verdict': criterion 'accurate': verdict must be MET" in err
    assert _count(db_url, m.HumanVerdictRow) == 0

    sheet.write_text(head + "a,clarity,good,ann,clear enough\n")
    assert import_verdicts(str(sheet), **args) == 0
    [response_a, _b] = datasets.list_responses(sessions, dataset.id, limit=None)
    [saved] = reviews.verdict_history(sessions, response_a.id)
    assert (saved.criterion_id, saved.option, saved.note) == (clarity.id, "Good",
                                                              "clear enough")
    exported = export_verdict_sheet_csv(sessions, version.id, dataset.id)
    assert "a,clarity,Good," in exported
    # the exported sheet imports back as unchanged
    sheet.write_text(exported)
    assert import_verdicts(str(sheet), **args) == 0
    assert "left out 1 unchanged" in capsys.readouterr().out
    assert _count(db_url, m.HumanVerdictRow) == 1
    sessions.kw["bind"].dispose()
