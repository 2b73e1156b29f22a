"""Exports with hostile cells: every CSV is spreadsheet-safe, JSONL stays exact, the verdict
sheet round-trips; ``response_id`` is the user's id everywhere; file names are the names the
user sees. On SQLite and PostgreSQL alike."""

from __future__ import annotations

import csv
import io
import json

import pytest

from grading.types import Criterion, CriterionReport, EvaluationReport, TokenUsage, Verdict
from storage import csv_cells
from storage.cli import main as cli_main
from storage.export_names import download_name, response_key
from storage.exports import results_export, results_file_name, table_csv
from storage.services import datasets, labels, results, reviews, rubrics, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.jobs.helpers import make_run

FORMULA_IDS = ["=1+1", "-2+3", "@SUM(A1:A9)", "+cmd|' /C calc'!A0", "=HYPERLINK(\"x\")",
               "'=already quoted", "-5", "plain"]
CRITERIA = [
    Criterion(name="=HYPERLINK(\"http://evil\",\"click\")", requirement="-drops the dose",
              weight=10),
    Criterion(name="@cites", requirement="+cites a source", weight=5),
]
DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


@pytest.mark.parametrize(("value", "written"), [
    pytest.param("=1+1", "'=1+1", id="equals"),
    pytest.param("+1+cmd", "'+1+cmd", id="plus"),
    pytest.param("-1+cmd", "'-1+cmd", id="minus"),
    pytest.param("@SUM(A1)", "'@SUM(A1)", id="at"),
    pytest.param("\t=1", "'\t=1", id="tab"),
    pytest.param("\r=1", "'\r=1", id="carriage-return"),
    pytest.param("  =1", "'  =1", id="after-spaces"),
    pytest.param("\uff1d1+1", "'\uff1d1+1", id="full-width-equals"),
    pytest.param("'=x", "''=x", id="leading-quote-is-escaped-too"),
    pytest.param("'plain", "''plain", id="any-leading-quote"),
    pytest.param("-5", "-5", id="negative-number-text-stays"),
    pytest.param("+1.5e3", "+1.5e3", id="signed-number-text-stays"),
    pytest.param("plain = text", "plain = text", id="formula-char-later-is-harmless"),
    pytest.param("", "", id="empty"),
    pytest.param(-0.5, -0.5, id="a-real-number-is-untouched"),
    pytest.param(None, None, id="none"),
])
def test_a_cell_that_would_start_a_formula_gets_a_quote_and_restores_exactly(value, written):
    assert csv_cells.spreadsheet_safe(value) == written
    if isinstance(value, str):
        assert csv_cells.restore(csv_cells.spreadsheet_safe(value)) == value


@pytest.mark.parametrize("typed", ["'hello", "'-5", "it's"])
def test_restore_leaves_a_quote_the_exporter_did_not_add(typed):
    assert csv_cells.restore(typed) == typed


def _unsafe_cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row
            if cell.lstrip(" ").startswith(DANGEROUS)
            and not csv_cells._NUMBER.fullmatch(cell.strip())]


def _hostile_run(sessions):
    version = rubrics.create_rubric(sessions, "Dose = safety", CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, "UX 50 replies", responses=[
        {"id": rid, "text": f"answer {n}"} for n, rid in enumerate(FORMULA_IDS)
    ] + [{"text": "no id given"}], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1",
                   model="openai/=judge")
    runs.start_run(sessions, run.id, worker="w")
    for response in responses:
        report = EvaluationReport(
            score=1.0, raw_score=15,
            report=[CriterionReport(**c.model_dump(), verdict=Verdict.MET,
                                    reason="\t=cmd|' /C calc'!A0 said the judge")
                    for c in CRITERIA],
            token_usage=TokenUsage(prompt_tokens=3, completion_tokens=2, total_tokens=5))
        runs.record_grade(sessions, run.id, response.id, report)
    first = responses[0]
    reviews.set_human_verdict(sessions, response_id=first.id, criterion_id=version.criteria[0].id,
                              verdict="UNMET", actor=local_actor("+reviewer"),
                              note="-not really")
    return version, dataset, responses, run


def test_results_csv_has_no_cell_a_spreadsheet_would_run_and_jsonl_is_exact(sessions):
    version, _, _, run = _hostile_run(sessions)
    text = results_export(sessions, [run.id], "csv")
    assert _unsafe_cells(text) == []
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [csv_cells.restore(r["response_id"]) for r in rows[:-1]] == FORMULA_IDS
    label = csv_cells.restore(next(c for c in rows[0] if c.endswith(".reviewer")))
    assert label == f"{version.criteria[0].label}.reviewer"
    records = [json.loads(line) for line in results_export(sessions, [run.id]).splitlines()]
    assert [r["response_id"] for r in records[:-1]] == FORMULA_IDS
    assert records[0]["criteria"][0]["reviewer"] == "+reviewer"
    assert records[0]["criteria"][0]["reason"].startswith("\t=cmd")
    assert records[0]["model"] == "openai/=judge"


def test_the_results_table_csv_is_spreadsheet_safe(sessions):
    version, dataset, _, run = _hostile_run(sessions)
    page = results.results_page(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                                run_ids=[run.id], limit=100)
    text = table_csv(page, [runs.get_run(sessions, run.id)])
    assert _unsafe_cells(text) == []
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [csv_cells.restore(r["response_id"]) for r in rows[:-1]] == FORMULA_IDS
    assert rows[-1]["response_id"] == f"#{rows[-1]['workbench_response_id']}"


def test_the_verdict_sheet_is_safe_and_imports_back_unchanged_then_edited(sessions):
    version, dataset, responses, _ = _hostile_run(sessions)
    sheet = labels.export_verdict_sheet_csv(sessions, version.id, dataset.id)
    assert _unsafe_cells(sheet) == []
    unchanged = labels.import_human_verdicts(sessions, version.id, dataset.id, sheet, actor=ADMIN)
    assert (unchanged.verdicts, unchanged.unchanged) == (0, 1)

    rows = list(csv.reader(io.StringIO(sheet, newline="")))
    for row in rows[1:]:
        if row[2] == "":  # fill every empty verdict as a reviewer whose name starts with '='
            row[2:5] = ["met", "'=ana", "@note"]
    edited = io.StringIO()
    csv.writer(edited).writerows(rows)
    summary = labels.import_human_verdicts(sessions, version.id, dataset.id, edited.getvalue(),
                                           actor=ADMIN, create_reviewers=True)
    assert summary.verdicts == len(responses) * len(CRITERIA) - 1
    assert summary.reviewers == ("=ana",)
    history = reviews.verdict_history(sessions, responses[3].id, rubric_version_id=version.id)
    assert {(h.reviewer, h.note) for h in history} == {("=ana", "@note")}


def test_response_id_is_the_users_id_in_every_export(sessions):
    version, dataset, responses, run = _hostile_run(sessions)
    first, last = responses[0], responses[-1]
    expected = {"=1+1": first.id, f"#{last.id}": last.id}
    records = [json.loads(line) for line in results_export(sessions, [run.id]).splitlines()]
    gold = [json.loads(line) for line in
            labels.export_gold_jsonl(sessions, version.id, dataset.id).splitlines()]
    training = [json.loads(line) for line in
                labels.export_training_jsonl(sessions, version.id, dataset.id).splitlines()]
    for exported in (records, training):
        by_key = {r["response_id"]: r["workbench_response_id"] for r in exported}
        assert {k: by_key[k] for k in expected} == expected
        assert "external_id" not in exported[0]
    assert [(g["response_id"], g["workbench_response_id"]) for g in gold] == [("=1+1", first.id)]
    sheet = list(csv.DictReader(io.StringIO(labels.export_verdict_sheet_csv(
        sessions, version.id, dataset.id), newline="")))
    assert csv_cells.restore(sheet[0]["response_id"]) == "=1+1"
    assert sheet[-1]["response_id"] == response_key(last.id, None) == f"#{last.id}"


@pytest.mark.parametrize(("parts", "name"), [
    pytest.param(("results", "UX 50 replies", "Dosing"), "results-UX_50_replies-Dosing-v1.csv",
                 id="spaces"),
    pytest.param(("gold", "a/b\\c:d*e?f\"g<h>i|j", "R"), "gold-a_b_c_d_e_f_g_h_i_j-R-v1.csv",
                 id="path-and-shell-characters"),
    pytest.param(("verdicts", "../../etc/passwd", "x"), "verdicts-etc_passwd-x-v1.csv",
                 id="no-path-escape"),
    pytest.param(("training", "Réponses 日本", "r"), "training-Réponses_日本-r-v1.csv",
                 id="letters-of-any-script-kept"),
    pytest.param(("results", "=1+1", "!!"), "results-1_1-export-v1.csv", id="only-symbols"),
])
def test_file_names_use_the_names_the_user_sees_in_safe_characters(parts, name):
    assert download_name(*parts, version=1, ext="csv") == name


def test_downloads_and_the_cli_name_files_after_dataset_rubric_and_version(
        sessions, db_url, tmp_path, capsys):
    version, dataset, _, run = _hostile_run(sessions)
    assert results_file_name(sessions, [run.id], "csv") == \
        "results-UX_50_replies-Dose_safety-v1.csv"
    assert labels.export_file_name(sessions, "gold", version.id, dataset.id, "jsonl") == \
        "gold-UX_50_replies-Dose_safety-v1.jsonl"
    out = tmp_path / "exports"
    out.mkdir()
    assert cli_main(["export", "--run", str(run.id), "--format", "csv", "--out", str(out),
                     "--db", db_url]) == 0
    assert cli_main(["export", "--kind", "verdicts", "--rubric", "Dose = safety", "--dataset",
                     "UX 50 replies", "--out", str(out), "--db", db_url]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "results-UX_50_replies-Dose_safety-v1.csv", "verdicts-UX_50_replies-Dose_safety-v1.csv"]
    assert _unsafe_cells((out / "verdicts-UX_50_replies-Dose_safety-v1.csv").read_text()) == []
