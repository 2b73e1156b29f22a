"""A panel read while a member run is still grading, on SQLite and PostgreSQL: a member that
has not graded a response yet is pending, never failed. The panel's record is marked
incomplete (naming the members it waits for), criteria the pending member could still swing
are undecided and unscored, and the record becomes complete once the member has graded or
its run has ended."""

from __future__ import annotations

import json

import pytest

from grading.types import ScoringSettings, Verdict
from storage import exports
from storage.panel_commands import panel_records
from storage.services import datasets, panel_results, panels, runs
from tests.storage.helpers import CRITERIA, judge_report, make_rubric, make_run
from tests.storage.test_panels import ADMIN

M, U, CA = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS


def _grade(sessions, run_id, response, verdicts):
    runs.record_grade(sessions, run_id, response.id,
                      judge_report(CRITERIA, verdicts, ScoringSettings(), response.output))


@pytest.fixture
def one_still_grading(sessions):
    """Three judges of one response: #1 and #2 done and split on 'cites' (MET/UNMET), #3
    still running and not at this response yet."""
    version = make_rubric(sessions)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": "r0", "text": "answer 0"}], actor=ADMIN)
    [response] = datasets.list_responses(sessions, dataset.id, limit=None)
    judges = [make_run(sessions, version.id, dataset.id).id for _ in range(3)]
    # CRITERIA: accurate 10, cites 5, concise 2.5, harmful -8
    _grade(sessions, judges[0], response, [M, M, M, U])
    _grade(sessions, judges[1], response, [M, U, M, U])
    for run_id in judges:
        runs.start_run(sessions, run_id)
    for run_id in judges[:2]:
        runs.finish_run(sessions, run_id)
    panel = panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN)
    return panel, response, judges


def test_a_member_still_grading_leaves_the_record_incomplete_not_failed(
        sessions, one_still_grading):
    panel, _response, judges = one_still_grading
    [grade] = panels.panel_grades(sessions, panel.id)
    assert grade.pending_members == (judges[2],)
    assert not grade.complete
    by_label = {row.label: row.decision for row in grade.criteria}
    # 2 of 3 agree: whatever #3 answers, the majority holds
    assert by_label["accurate"].verdict is M and by_label["harmful"].verdict is U
    # 1 MET, 1 UNMET: counting #3 as failed made it a tie resolved to UNMET; #3 decides it
    cites = by_label["cites"]
    assert cites.verdict is None and not cites.tie
    assert cites.note.startswith(f"undecided: waiting for run #{judges[2]} to grade")
    assert cites.failed == 0
    assert grade.score is None
    assert grade.error.startswith(f"incomplete: waiting for run #{judges[2]}")
    assert "cites" in grade.error


def test_the_exports_mark_the_record_incomplete_until_the_member_has_graded(
        sessions, one_still_grading):
    panel, response, judges = one_still_grading
    [record] = panel_records(sessions, panel.id)  # rubric-workbench panel export
    assert record["complete"] is False and record["pending_members"] == [judges[2]]
    assert record["score"] is None
    cites = next(c for c in record["criteria"] if c["criterion"] == "cites")
    assert cites["verdict"] is None and cites["tie"] is False
    [full] = exports.iter_panel_records(sessions, [panel.id])  # export --panel
    assert full["complete"] is False and full["pending_members"] == str(judges[2])
    assert full["score"] is None and full["error"].startswith("incomplete")
    text = exports.results_export(sessions, [], "csv", [panel.id])
    assert "complete" in text.splitlines()[0] and "pending_members" in text.splitlines()[0]

    _grade(sessions, judges[2], response, [M, M, U, U])  # #3 reaches the response
    [after] = panels.panel_grades(sessions, panel.id)
    assert after.complete and after.pending_members == ()
    assert {row.label: row.decision.verdict for row in after.criteria}["cites"] is M
    assert after.score is not None
    [full] = exports.iter_panel_records(sessions, [panel.id])
    assert full["complete"] is True and full["pending_members"] == ""
    [line] = exports.results_export(sessions, [], "jsonl", [panel.id]).splitlines()
    assert json.loads(line)["complete"] is True


def test_a_member_run_that_ended_without_grading_counts_as_failed(
        sessions, one_still_grading):
    """Once the run is over the member will never answer: then, and only then, it failed."""
    panel, _response, judges = one_still_grading
    runs.fail_run(sessions, judges[2], "no credentials")
    [grade] = panels.panel_grades(sessions, panel.id)
    assert grade.complete
    cites = next(row for row in grade.criteria if row.label == "cites")
    # the split is a tie, decided by the one tie rule (grading.ties): undecided
    assert cites.decision.verdict is CA and cites.decision.tie and cites.decision.failed == 1
    assert grade.score is not None


def test_the_panel_results_page_reads_the_incomplete_record_as_waiting(
        sessions, one_still_grading):
    panel, _response, judges = one_still_grading
    [result] = panel_results.panel_results(sessions, panel.id)
    assert result.effective.score is None
    cites = next(row for row in result.effective.criteria if row.label == "cites")
    assert cites.effective_verdict is None
    assert result.effective.error.startswith(f"incomplete: waiting for run #{judges[2]}")


def test_the_export_names_a_pending_member_pending_not_failed(sessions, one_still_grading):
    panel, _response, judges = one_still_grading
    [full] = exports.iter_panel_records(sessions, [panel.id])
    cites = next(c for c in full["criteria"] if c["name"] == "cites")
    assert cites["members"] == f"#{judges[0]}:MET #{judges[1]}:UNMET #{judges[2]}:pending"
