"""Blind review in every reader: a reviewer who has not answered a criterion sees nobody
else's verdict or note on it — in the response detail (Results dialog, its history), the
results export, the gold set, the verdict sheet and the command line — on both databases."""

from __future__ import annotations

import csv
import io
import json

import pytest

from grading.types import Verdict
from storage.exports import results_export
from storage.services import blindness, labels, review_queue, reviews
from storage.services.reviewers import Actor, Role
from tests.storage.helpers import CRITERIA, make_dataset, make_rubric, make_run
from tests.storage.judges import ScriptedJudge, grade

V = Verdict
ANA = Actor(key="ana@example.org", name="Ana", roles=frozenset({Role.REVIEWER}))
BO = Actor(key="bo@example.org", name="Bo", roles=frozenset({Role.REVIEWER}))
EVE = Actor(key="eve@example.org", name="Eve", roles=frozenset({Role.ADJUDICATOR}))
SECRET = "ana's secret reasoning"


@pytest.fixture
def scene(sessions):
    """One graded response; Ana answered 'cites' (the judge said UNMET) with a note."""
    version = make_rubric(sessions)
    dataset, [response, *_] = make_dataset(sessions, count=2)
    run = make_run(sessions, version.id, dataset.id)
    from storage.services import runs

    judge = ScriptedJudge(CRITERIA, {"r0": [V.MET, V.UNMET, V.MET, V.UNMET],
                                     "r1": [V.MET, V.UNMET, V.MET, V.UNMET]})
    report = grade("per_criterion", run.settings, CRITERIA, "[r0] answer", judge)
    runs.record_grade(sessions, run.id, response.id, report)
    cites = version.criteria[1]
    reviews.set_human_verdict(sessions, actor=ANA, response_id=response.id,
                              criterion_id=cites.id, verdict="MET", note=SECRET)
    return version, dataset, response, run, cites


def _answer(sessions, actor, response, criterion, verdict="UNMET"):
    reviews.set_human_verdict(sessions, actor=actor, response_id=response.id,
                              criterion_id=criterion.id, verdict=verdict, note="mine")


def test_the_rule_reviewers_see_only_what_they_answered_adjudicators_everything():
    assert blindness.sight_of(BO) == blindness.Sight("bo@example.org", sees_all=False)
    assert blindness.sight_of(EVE).sees_all
    assert blindness.sight_of(Actor("root", "root", frozenset(Role))).sees_all
    assert blindness.sight_of(None) == blindness.NOBODY


def test_results_dialog_hides_the_other_reviewers_verdict_note_and_history(sessions, scene):
    version, _d, response, run, cites = scene
    detail = review_queue.response_detail(sessions, response.id, version.id, [run.id],
                                          sight=blindness.sight_of(BO))
    assert cites.id not in detail.humans and cites.id in detail.hidden
    assert detail.history == ()
    # Nor through the scores: the effective verdict is still the judge's.
    [grade_] = detail.grades
    row = next(c for c in grade_.criteria if c.criterion_id == cites.id)
    assert row.human is None and row.effective_verdict == V.UNMET
    assert detail.human_score.reviewed_count == 0
    _answer(sessions, BO, response, cites)
    seen = review_queue.response_detail(sessions, response.id, version.id, [run.id],
                                        sight=blindness.sight_of(BO))
    assert {h.note for h in seen.history} == {SECRET, "mine"}
    assert seen.humans[cites.id].disputed
    lead = review_queue.response_detail(sessions, response.id, version.id, [run.id],
                                        sight=blindness.sight_of(EVE))
    assert {h.note for h in lead.history} == {SECRET, "mine"}


def test_results_export_hides_the_other_reviewers_verdict_and_note(sessions, scene):
    _v, _d, _response, run, cites = scene
    for fmt in ("jsonl", "csv"):
        text = results_export(sessions, [run.id], fmt, sight=blindness.sight_of(BO))
        assert SECRET not in text and "ana@example.org" not in text and "Ana" not in text
    [record] = [json.loads(line) for line in results_export(
        sessions, [run.id], sight=blindness.sight_of(BO)).splitlines()]
    row = next(c for c in record["criteria"] if c["criterion_id"] == cites.id)
    assert (row["human_verdict"], row["effective_verdict"], row["human_status"]) == (
        None, "UNMET", "not_reviewed")
    assert SECRET in results_export(sessions, [run.id], sight=blindness.sight_of(EVE))


def test_gold_set_download_hides_the_other_reviewers_verdict_and_note(sessions, scene):
    version, dataset, response, _run, cites = scene
    assert labels.export_gold_jsonl(sessions, version.id, dataset.id,
                                    sight=blindness.sight_of(BO)) == ""
    assert SECRET in labels.export_gold_jsonl(sessions, version.id, dataset.id,
                                              sight=blindness.sight_of(EVE))
    _answer(sessions, BO, response, cites)
    [record] = [json.loads(line) for line in labels.export_gold_jsonl(
        sessions, version.id, dataset.id, sight=blindness.sight_of(BO)).splitlines()]
    item = next(i for i in record["rubrics"] if i["name"] == "cites")
    assert {r["note"] for r in item["reviewers"]} == {SECRET, "mine"}


def test_gold_set_keeps_only_the_criteria_the_reviewer_answered(sessions, scene):
    version, dataset, response, _run, cites = scene
    accurate = version.criteria[0]
    reviews.set_human_verdict(sessions, actor=ANA, response_id=response.id,
                              criterion_id=accurate.id, verdict="UNMET", note="dose wrong")
    _answer(sessions, BO, response, cites, "MET")  # agrees with Ana on 'cites'
    [record] = [json.loads(line) for line in labels.export_gold_jsonl(
        sessions, version.id, dataset.id, sight=blindness.sight_of(BO)).splitlines()]
    item = next(i for i in record["rubrics"] if i["name"] == "accurate")
    assert item["status"] == "not_reviewed" and item["reviewers"] == []
    assert "dose wrong" not in json.dumps(record) and record["reviewed_count"] == 1


def test_verdict_sheet_download_hides_the_other_reviewers_verdict_and_note(sessions, scene):
    version, dataset, response, _run, cites = scene
    sheet = labels.export_verdict_sheet_csv(sessions, version.id, dataset.id,
                                            sight=blindness.sight_of(BO))
    assert SECRET not in sheet and "ana@example.org" not in sheet
    rows = list(csv.DictReader(io.StringIO(sheet)))
    assert len(rows) == 2 * len(CRITERIA)  # every response x criterion, blank to fill in
    assert {r["verdict"] for r in rows} == {""}
    _answer(sessions, BO, response, cites)
    rows = list(csv.DictReader(io.StringIO(labels.export_verdict_sheet_csv(
        sessions, version.id, dataset.id, sight=blindness.sight_of(BO)))))
    assert {(r["reviewer"], r["note"]) for r in rows if r["verdict"]} == {
        ("ana@example.org", SECRET), ("bo@example.org", "mine")}


@pytest.mark.parametrize("kind", ["verdicts", "gold", "results"])
def test_command_line_export_for_a_reviewer_is_blind(sessions, scene, db_url, tmp_path, kind):
    from storage.cli import main

    _v, _d, _response, run, _cites = scene
    scope = (["--run", str(run.id)] if kind == "results"
             else ["--rubric", "Dosing", "--dataset", "Answers"])
    blind, full = tmp_path / "blind.out", tmp_path / "full.out"
    assert main(["export", "--kind", kind, *scope, "--for-reviewer", "bo@example.org",
                 "--out", str(blind), "--db", db_url]) == 0
    assert main(["export", "--kind", kind, *scope, "--out", str(full), "--db", db_url]) == 0
    assert SECRET not in blind.read_text() and "ana@example.org" not in blind.read_text()
    assert SECRET in full.read_text()  # the command line itself sees everything
