"""The results export: one record per response x run with judge, human and effective
verdicts; CSV and JSONL carry the same facts."""

from __future__ import annotations

import csv
import io
import json

import pytest

from grading.types import CriterionReport, EvaluationReport, TokenUsage, Verdict
from storage.exports import results_export
from storage.services import datasets, reviews, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.jobs.helpers import CRITERIA, make_dataset, make_rubric, make_run

V = Verdict


def _graded_run(sessions, verdicts_by_response):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, len(verdicts_by_response))
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1")
    runs.start_run(sessions, run.id, worker="w")
    for response, verdicts in zip(responses, verdicts_by_response, strict=True):
        met = sum(c.weight for c, v in zip(CRITERIA, verdicts, strict=True) if v is V.MET)
        report = EvaluationReport(
            score=met / 15, raw_score=met,
            report=[CriterionReport(**c.model_dump(), verdict=v, reason=f"why {c.name}")
                    for c, v in zip(CRITERIA, verdicts, strict=True)],
            token_usage=TokenUsage(prompt_tokens=3, completion_tokens=2, total_tokens=5))
        runs.record_grade(sessions, run.id, response.id, report)
    return version, responses, run


def test_records_carry_judge_human_and_effective_verdicts(sessions):
    version, responses, run = _graded_run(sessions, [(V.MET, V.UNMET, V.UNMET),
                                                     (V.MET, V.MET, V.MET)])
    harmful = version.criteria[2]
    reviews.set_human_verdict(sessions, response_id=responses[1].id, criterion_id=harmful.id,
                              verdict="UNMET", actor=local_actor("Dana"), note="no harm here")

    records = [json.loads(line) for line in results_export(sessions, [run.id]).splitlines()]

    assert [r["response_id"] for r in records] == ["r0", "r1"]
    first, second = records
    assert (first["score"], first["effective_score"], first["reviewed_criteria"]) == (
        pytest.approx(10 / 15), pytest.approx(10 / 15), 0)
    assert (second["rubric_version_id"], second["rubric_version"], second["grader"],
            second["model"]) == (version.id, 1, "per_criterion", "openai/fake-judge")
    # The judge said the harmful thing happened (-8); the reviewer says it did not.
    assert second["score"] == pytest.approx(7 / 15)
    assert second["effective_score"] == pytest.approx(15 / 15)
    row = second["criteria"][2]
    assert row == {
        "criterion_id": harmful.id, "name": "harmful",
        "requirement": "Recommends a harmful action", "weight": -8.0,
        "judge_verdict": "MET", "reason": "why harmful", "judge_error": None,
        "human_verdict": "UNMET", "human_note": "no harm here", "effective_verdict": "UNMET",
        "reviewer": "Dana", "human_status": "agreed",
    }
    assert (second["disputed_count"], second["disputed_criteria"]) == (0, [])
    assert second["criteria"][0]["human_verdict"] is None
    assert second["criteria"][0]["effective_verdict"] == "MET"


def test_csv_has_one_column_group_per_criterion(sessions):
    version, responses, run = _graded_run(sessions, [(V.MET, V.UNMET, V.UNMET)])
    reviews.set_human_verdict(sessions, response_id=responses[0].id,
                              criterion_id=version.criteria[1].id, verdict="MET",
                              actor=local_actor("Lee"))
    [row] = list(csv.DictReader(io.StringIO(results_export(sessions, [run.id], "csv"))))
    assert row["run_id"] == str(run.id) and row["response_id"] == "r0"
    assert (row["cites.judge_verdict"], row["cites.human_verdict"],
            row["cites.effective_verdict"], row["cites.reviewer"]) == ("UNMET", "MET", "MET", "Lee")
    assert float(row["effective_score"]) == pytest.approx(1.0)
    assert float(row["score"]) == pytest.approx(10 / 15)


def test_only_graded_responses_are_exported(sessions):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 3)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1")
    assert results_export(sessions, [run.id]) == ""
    header = results_export(sessions, [run.id], "csv").splitlines()
    assert len(header) == 1 and header[0].startswith("run_id,run_name,response_id")


def _dispute(sessions, response_id, criterion_id):
    reviews.set_human_verdict(sessions, response_id=response_id, criterion_id=criterion_id,
                              verdict="MET", actor=local_actor("ana"), note="it cites one")
    reviews.set_human_verdict(sessions, response_id=response_id, criterion_id=criterion_id,
                              verdict="UNMET", actor=local_actor("bo"), note="a blog")


def test_disputed_criteria_are_in_the_jsonl_and_csv_exports(sessions):
    version, responses, run = _graded_run(sessions, [(V.MET, V.UNMET, V.UNMET),
                                                     (V.MET, V.MET, V.MET)])
    cites, harmful = version.criteria[1], version.criteria[2]
    _dispute(sessions, responses[0].id, cites.id)
    _dispute(sessions, responses[0].id, harmful.id)
    reviews.set_human_verdict(sessions, response_id=responses[1].id, criterion_id=cites.id,
                              verdict="MET", actor=local_actor("ana"))

    first, second = [json.loads(line) for line in
                     results_export(sessions, [run.id]).splitlines()]
    assert (first["disputed_count"], first["disputed_criteria"]) == (2, ["cites", "harmful"])
    assert [c["human_status"] for c in first["criteria"]] == [
        "not_reviewed", "disputed", "disputed"]
    # disputed: no human verdict applies, the judge's stands
    assert (first["criteria"][1]["human_verdict"], first["criteria"][1]["effective_verdict"]
            ) == (None, "UNMET")
    assert first["effective_score"] == pytest.approx(first["score"])
    assert (second["disputed_count"], second["disputed_criteria"]) == (0, [])
    assert second["criteria"][1]["human_status"] == "agreed"

    rows = list(csv.DictReader(io.StringIO(results_export(sessions, [run.id], "csv"))))
    assert [(r["disputed_count"], r["disputed_criteria"]) for r in rows] == [
        ("2", "cites; harmful"), ("0", "")]
    assert [r["cites.human_status"] for r in rows] == ["disputed", "agreed"]
    assert rows[0]["harmful.human_status"] == "disputed"
    assert rows[0]["accurate.human_status"] == "not_reviewed"

    reviews.adjudicate(sessions, response_id=responses[0].id, criterion_id=cites.id,
                       verdict="MET", actor=local_actor("cy"))
    first = json.loads(results_export(sessions, [run.id]).splitlines()[0])
    assert (first["disputed_count"], first["disputed_criteria"]) == (1, ["harmful"])
    assert first["criteria"][1]["human_status"] == "adjudicated"


def test_the_results_table_csv_names_the_disputed_criteria(sessions):
    from storage.exports import table_csv
    from storage.services.results import results_page

    version, responses, run = _graded_run(sessions, [(V.MET, V.UNMET, V.UNMET),
                                                     (V.MET, V.MET, V.MET)])
    _dispute(sessions, responses[1].id, version.criteria[0].id)
    page = results_page(sessions, dataset_id=run.dataset_id, rubric_version_id=version.id,
                        run_ids=[run.id])
    assert [r.disputed for r in page.rows] == [(), ("accurate",)]
    rows = list(csv.DictReader(io.StringIO(table_csv(page, [run]))))
    assert [(r["disputed_count"], r["disputed_criteria"]) for r in rows] == [
        ("0", ""), ("1", "accurate")]


def _graded_upload(sessions):
    """A run over an upload with its own columns, one named like the judge's ``model``."""
    version = make_rubric(sessions)
    rows = [{"id": "a1", "query": "When can I return it?",
             "text": "Within 30 days.\nKeep the receipt.", "model": "user-model-7b",
             "reference": "30 days", "temperature": 0.2},
            {"id": "a2", "query": "Hi", "text": "=SUM(A1)", "model": "other",
             "tags": ["x", "y"]}]
    dataset = datasets.create_dataset(sessions, "Uploaded", responses=rows, actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1")
    runs.start_run(sessions, run.id, worker="w")
    for response in responses:
        report = EvaluationReport(
            score=1.0, raw_score=15,
            report=[CriterionReport(**c.model_dump(), verdict=V.MET, reason="ok")
                    for c in CRITERIA],
            token_usage=TokenUsage(prompt_tokens=3, completion_tokens=2, total_tokens=5))
        runs.record_grade(sessions, run.id, response.id, report)
    return run


def test_exports_carry_the_response_and_the_uploads_own_columns(sessions):
    run = _graded_upload(sessions)
    first, second = [json.loads(line) for line in results_export(sessions, [run.id])
                     .splitlines()]
    assert (first["query"], first["response_text"], first["model"]) == (
        "When can I return it?", "Within 30 days.\nKeep the receipt.", "openai/fake-judge")
    # a column named "reference" is the reference answer (issue 34), not an upload column
    assert (first["reference"], second["reference"]) == ("30 days", None)
    assert first["upload"] == {"model": "user-model-7b", "temperature": 0.2}
    assert second["upload"] == {"model": "other", "tags": ["x", "y"]}

    rows = list(csv.DictReader(io.StringIO(results_export(sessions, [run.id], "csv"))))
    header = list(rows[0])
    assert len(header) == len(set(header))  # no user column replaced one of ours
    assert header.index("response_text") < header.index("upload.model") < header.index(
        "harmful.judge_verdict")
    assert [(r["model"], r["upload.model"]) for r in rows] == [
        ("openai/fake-judge", "user-model-7b"), ("openai/fake-judge", "other")]
    assert (rows[0]["reference"], rows[0]["upload.temperature"], rows[0]["upload.tags"],
            rows[1]["reference"]) == ("30 days", "0.2", "", "")
    assert header.index("thinking") < header.index("reference") < header.index("upload.model")
    assert rows[1]["upload.tags"] == '["x", "y"]'
    assert rows[0]["response_text"] == "Within 30 days.\nKeep the receipt."
    assert rows[1]["response_text"] == "'=SUM(A1)"  # spreadsheet-safe like every cell
    assert rows[1]["query"] == "Hi"


def test_the_results_table_csv_ends_with_the_response_as_uploaded(sessions):
    from storage.exports import table_csv, table_responses
    from storage.services.results import results_page

    run = _graded_upload(sessions)
    page = results_page(sessions, dataset_id=run.dataset_id,
                        rubric_version_id=run.rubric_version_id, run_ids=[run.id])
    rows = list(csv.DictReader(io.StringIO(
        table_csv(page, [run], responses=table_responses(sessions, page)))))
    assert [(r["response_id"], r["query"], r["response_text"], r["upload.model"],
             r["reference"], r["upload.tags"]) for r in rows] == [
        ("a1", "When can I return it?", "Within 30 days.\nKeep the receipt.", "user-model-7b",
         "30 days", ""),
        ("a2", "Hi", "'=SUM(A1)", "other", "", '["x", "y"]')]
