"""The command-line front of the label exports and the verdict import."""

from __future__ import annotations

import json

import pytest

from storage.errors import NotFoundError
from storage.label_commands import export_labels, import_verdicts
from storage.services import labels, reviews
from tests.storage.agreement_seed import seed


def test_scope_is_resolved_by_names_latest_version_by_default(sessions):
    seeded = seed(sessions)
    assert labels.resolve_scope(sessions, rubric="Dosing", dataset="Answers") == (
        seeded.version.id, seeded.dataset.id)
    assert labels.resolve_scope(sessions, rubric="Dosing", dataset="Answers", version=1)[0] == (
        seeded.version.id)
    with pytest.raises(NotFoundError, match="has no version 7; it has 1"):
        labels.resolve_scope(sessions, rubric="Dosing", dataset="Answers", version=7)
    with pytest.raises(NotFoundError, match="no rubric named 'Nope'"):
        labels.resolve_scope(sessions, rubric="Nope", dataset="Answers")
    with pytest.raises(NotFoundError, match="no dataset named 'Nope'"):
        labels.resolve_scope(sessions, rubric="Dosing", dataset="Nope")


def test_gold_and_training_exports_write_jsonl_files(sessions, db_url, tmp_path, capsys):
    seeded = seed(sessions)
    gold = tmp_path / "gold.jsonl"
    assert export_labels("gold", rubric="Dosing", dataset="Answers", out=str(gold),
                         complete_only=True, db=db_url) == 0
    assert gold.read_text() == labels.export_gold_jsonl(
        sessions, seeded.version.id, seeded.dataset.id, complete_only=True)
    assert "wrote 4 gold records" in capsys.readouterr().err
    assert export_labels("training", rubric="Dosing", dataset="Answers", db=db_url) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 18 and json.loads(lines[0])["completion"]
    sheet = tmp_path / "verdicts.csv"
    assert export_labels("verdicts", rubric="Dosing", dataset="Answers", out=str(sheet),
                         db=db_url) == 0
    assert sheet.read_text() == labels.export_verdict_sheet_csv(
        sessions, seeded.version.id, seeded.dataset.id)
    assert "wrote 24 verdict rows" in capsys.readouterr().err


def test_export_of_an_unknown_rubric_is_an_error_message(sessions, db_url, capsys):
    seed(sessions)
    assert export_labels("gold", rubric="Nope", dataset="Answers", db=db_url) == 1
    assert capsys.readouterr().err.startswith("error: no rubric named 'Nope'")


def test_import_prints_every_problem_or_what_it_wrote(sessions, db_url, tmp_path, capsys):
    seeded = seed(sessions)
    bad = tmp_path / "bad.csv"
    bad.write_text("response_id,criterion,verdict,reviewer\nr5,tone,met,bo\nzz,cites,met,\n")
    assert import_verdicts(str(bad), rubric="Dosing", dataset="Answers", db=db_url) == 1
    err = capsys.readouterr().err
    assert "nothing was imported; 3 problems" in err and "row 2 (line 3)" in err
    assert reviews.current_verdicts(sessions, seeded.responses["r5"].id,
                                    seeded.version.id) == {}
    good = tmp_path / "good.csv"
    good.write_text("response_id,criterion,verdict,reviewer\nr5,cites,met,bo\n")
    assert import_verdicts(str(good), rubric="Dosing", dataset="Answers", db=db_url) == 0
    assert "imported 1 verdicts on 1 responses (reviewers: bo (1)); left out 0 unchanged" in (
        capsys.readouterr().out)
    assert import_verdicts(str(tmp_path / "missing.csv"), rubric="Dosing", dataset="Answers",
                           db=db_url) == 1
    assert "cannot read" in capsys.readouterr().err


def test_rubric_workbench_export_writes_the_gold_and_training_sets(sessions, db_url, tmp_path,
                                                                   capsys):
    from storage.cli import main

    seeded = seed(sessions)
    gold = tmp_path / "gold.jsonl"
    assert main(["export", "--kind", "gold", "--rubric", "Dosing", "--dataset", "Answers",
                 "--out", str(gold), "--db", db_url]) == 0
    assert gold.read_text() == labels.export_gold_jsonl(sessions, seeded.version.id,
                                                        seeded.dataset.id)
    capsys.readouterr()
    assert main(["export", "--kind", "training", "--rubric", "Dosing", "--rubric-version",
                 "1", "--dataset", "Answers", "--db", db_url]) == 0
    assert capsys.readouterr().out == labels.export_training_jsonl(
        sessions, seeded.version.id, seeded.dataset.id)


def test_rubric_workbench_import_verdicts_round_trips_the_exported_sheet(sessions, db_url,
                                                                        tmp_path, capsys):
    from storage.cli import main

    seeded = seed(sessions)
    sheet = tmp_path / "verdicts.csv"
    assert main(["export", "--kind", "verdicts", "--rubric", "Dosing", "--dataset", "Answers",
                 "--out", str(sheet), "--db", db_url]) == 0
    sheet.write_text(sheet.read_text().replace("r5,accurate,,,,", "r5,accurate,MET,bo,,"))
    assert main(["import-verdicts", str(sheet), "--rubric", "Dosing", "--dataset", "Answers",
                 "--db", db_url]) == 0
    assert "imported 1 verdicts on 1 responses (reviewers: bo (1)); left out 18 unchanged and 5 " \
           "without a verdict" in capsys.readouterr().out
    r5 = reviews.current_verdicts(sessions, seeded.responses["r5"].id, seeded.version.id)
    assert [v.reviewer for v in r5.values()] == ["bo"]
    sheet.write_text("response_id,criterion,verdict,reviewer\nr5,tone,met,bo\n")
    assert main(["import-verdicts", str(sheet), "--rubric", "Dosing", "--dataset", "Answers",
                 "--db", db_url]) == 1
    assert "row 1 (line 2), column 'criterion': no criterion named 'tone'" in (
        capsys.readouterr().err)
