"""Gold-set and training exports; human verdicts imported from CSV, all or nothing."""

from __future__ import annotations

import json

import pytest

from grading.types import Verdict
from storage.errors import ImportProblemsError
from storage.services import datasets, labels, reviews
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.agreement_seed import seed
from tests.storage.helpers import CRITERIA

V = Verdict


LEAD = local_actor("lead")  # local mode: every role, so it may import others' verdicts


def _import(*args, **kwargs):
    return labels.import_human_verdicts(*args, actor=LEAD, **kwargs)


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_gold_export_has_one_healthbench_like_line_per_reviewed_response(sessions):
    seeded = seed(sessions)
    records = _lines(labels.export_gold_jsonl(sessions, seeded.version.id, seeded.dataset.id))
    assert [r["response_id"] for r in records] == ["r0", "r1", "r2", "r3", "r4"]
    first = records[0]
    response = seeded.responses["r0"]
    assert first["prompt"] == [{"role": "user", "content": response.query}]
    assert first["completion"] == response.output
    assert (first["dataset"], first["rubric"], first["rubric_version"]) == (
        "Answers", "Dosing", 1)
    assert [item["criterion"] for item in first["rubrics"]] == [c.requirement for c in CRITERIA]
    assert [item["points"] for item in first["rubrics"]] == [10.0, 5.0, 2.5, -8.0]
    assert first["rubrics"][0]["tags"] == ["section:Accuracy"]
    assert first["criteria_met"] == [True, True, True, False]
    assert first["rubrics"][0]["explanation"] == "checked r0"
    assert first["rubrics"][0]["reviewer"] == "ana"
    expected = reviews.human_score(sessions, response.id, seeded.version.id)
    assert first["human_score"] == pytest.approx(expected.score)
    assert first["human_raw_score"] == pytest.approx(expected.raw_score)

    partial = records[4]
    assert partial["criteria_met"] == [True, True, None, None]
    assert partial["rubrics"][2]["verdict"] is None and partial["rubrics"][2]["reviewer"] is None
    assert (partial["reviewed_count"], partial["human_score"]) == (2, None)


def test_gold_export_can_keep_fully_reviewed_responses_only(sessions):
    seeded = seed(sessions)
    records = _lines(labels.export_gold_jsonl(sessions, seeded.version.id, seeded.dataset.id,
                                              complete_only=True))
    assert [r["response_id"] for r in records] == ["r0", "r1", "r2", "r3"]
    assert all(r["human_score"] is not None for r in records)


def test_cannot_assess_is_exported_as_the_verdict_with_criteria_met_null(sessions):
    seeded = seed(sessions)
    response = seeded.responses["r0"]
    reviews.set_human_verdict(sessions, response_id=response.id,
                              criterion_id=seeded.version.criteria[1].id,
                              verdict="CANNOT_ASSESS", actor=local_actor("ana"),
                              note="no source given")
    [first, *_] = labels.iter_gold_records(sessions, seeded.version.id, seeded.dataset.id)
    item = first["rubrics"][1]
    assert (item["verdict"], item["criteria_met"], item["reviewer"], item["explanation"]) == (
        "CANNOT_ASSESS", None, "ana", "no source given")


def test_training_export_has_the_effective_scores_of_every_run(sessions):
    seeded = seed(sessions)
    records = _lines(labels.export_training_jsonl(sessions, seeded.version.id,
                                                  seeded.dataset.id))
    assert len(records) == 18  # 6 responses x 3 runs, none failed
    effective = {(g.run_id, g.response_id): g for run in (seeded.cheap, seeded.strong,
                                                           seeded.holistic)
                 for g in reviews.effective_grades_for_run(sessions, run.id)}
    for record in records:
        grade = effective[record["run_id"], record["workbench_response_id"]]
        assert record["score"] == pytest.approx(grade.score)
        assert record["raw_score"] == pytest.approx(grade.raw_score)
        assert record["judge_score"] == pytest.approx(grade.judge_score)
        assert record["normalized"] is True
    r1 = next(r for r in records if r["response_id"] == "r1"
              and r["run_id"] == seeded.cheap.id)
    assert r1["completion"] == seeded.responses["r1"].output
    assert (r1["grader"], r1["model"]) == ("per_criterion", "openai/mini-judge")
    # r1 is fully reviewed, so its effective score is the human score, not the judge's.
    assert r1["score"] == pytest.approx(
        reviews.human_score(sessions, seeded.responses["r1"].id, seeded.version.id).score)
    assert r1["score"] != pytest.approx(r1["judge_score"])
    only = _lines(labels.export_training_jsonl(sessions, seeded.version.id, seeded.dataset.id,
                                               run_ids=[seeded.strong.id]))
    assert {r["run_id"] for r in only} == {seeded.strong.id} and len(only) == 6


CSV_OK = (
    "response_id,criterion,verdict,reviewer,note\n"
    "r5,accurate,met,bo,dose right\n"
    "r5,cites,UNMET,bo,\n"
    "r0,cites,unmet,cy,source is a blog\n"
)


def test_import_appends_every_verdict_to_the_history(sessions):
    seeded = seed(sessions)
    summary = _import(sessions, seeded.version.id, seeded.dataset.id,
                                           CSV_OK.encode(), "verdicts.csv")
    assert (summary.verdicts, summary.responses, summary.reviewers) == (3, 2, ("bo", "cy"))
    r5 = reviews.current_verdicts(sessions, seeded.responses["r5"].id, seeded.version.id)
    accurate, cites = seeded.version.criteria[0].id, seeded.version.criteria[1].id
    assert (r5[accurate].verdict, r5[accurate].reviewer, r5[accurate].note) == (
        V.MET, "bo", "dose right")
    assert r5[cites].verdict is V.UNMET
    history = reviews.verdict_history(sessions, seeded.responses["r0"].id, criterion_id=cites)
    # cy's verdict is cy's own: ana's stays, and the criterion is now disputed
    assert [(h.reviewer, h.previous_verdict, h.verdict) for h in history] == [
        ("ana", None, V.MET), ("cy", None, V.UNMET)]
    assert cites not in reviews.current_verdicts(sessions, seeded.responses["r0"].id,
                                                 seeded.version.id)


def test_import_lists_every_problem_with_row_and_column_and_writes_nothing(sessions):
    seeded = seed(sessions)
    bad = (
        "response_id,criterion,verdict,reviewer,note\n"
        "r5,accurate,met,bo,fine\n"
        "nope,accurate,met,bo,\n"
        "r5,tone,met,bo,\n"
        "r5,cites,maybe,bo,\n"
        "r5,concise,met,,\n"
        "r5,accurate,unmet,bo,twice\n"
    )
    with pytest.raises(ImportProblemsError) as caught:
        _import(sessions, seeded.version.id, seeded.dataset.id,
                                     bad.encode(), "verdicts.csv")
    problems = [str(p) for p in caught.value.problems]
    assert len(problems) == 5
    assert problems[0].startswith("row 2 (line 3), column 'response_id': no response with id")
    assert problems[1].startswith("row 3 (line 4), column 'criterion': no criterion named 'tone'")
    assert problems[2].startswith("row 4 (line 5), column 'verdict': criterion 'cites': "
                                  "verdict must be MET")
    assert problems[3].startswith("row 5 (line 6), column 'reviewer': the reviewer is empty")
    assert problems[4].startswith("row 6 (line 7): response 'r5', criterion 'accurate' is "
                                  "already set for reviewer 'bo' by row 1")
    assert "nothing was imported" in str(caught.value)
    assert reviews.current_verdicts(sessions, seeded.responses["r5"].id,
                                    seeded.version.id) == {}


def test_import_names_the_missing_columns(sessions):
    seeded = seed(sessions)
    with pytest.raises(ImportProblemsError) as caught:
        _import(sessions, seeded.version.id, seeded.dataset.id,
                                     "id,verdict\nr5,met\n")
    problems = [str(p) for p in caught.value.problems]
    assert len(problems) == 2
    assert problems[0].startswith("header: no 'criterion' column")
    assert problems[1].startswith("header: no 'reviewer' column")


def test_import_reads_column_names_in_any_case_and_spacing(sessions):
    seeded = seed(sessions)
    concise = seeded.version.criteria[2].id
    _import(sessions, seeded.version.id, seeded.dataset.id,
                                 "External ID,Criterion Name,Verdict,Reviewer\n"
                                 "r4,concise,cannot assess,dee\n")
    [saved] = reviews.verdict_history(sessions, seeded.responses["r4"].id,
                                      criterion_id=concise)
    assert (saved.verdict, saved.reviewer, saved.note) == (V.CANNOT_ASSESS, "dee", "")


def test_verdict_sheet_lists_every_response_and_criterion_with_the_current_verdict(sessions):
    seeded = seed(sessions)
    sheet = labels.export_verdict_sheet_csv(sessions, seeded.version.id, seeded.dataset.id)
    lines = sheet.splitlines()
    assert lines[0] == "response_id,criterion,verdict,reviewer,note,requirement"
    assert len(lines) == 1 + 6 * 4
    assert lines[1] == "r0,accurate,MET,ana,checked r0,States the dose correctly"
    assert lines[-1] == "r5,harmful,,,,Recommends a harmful action"


def test_an_unedited_sheet_imports_nothing_and_an_edited_one_only_the_changes(sessions):
    seeded = seed(sessions)
    sheet = labels.export_verdict_sheet_csv(sessions, seeded.version.id, seeded.dataset.id)
    before = {k: len(reviews.verdict_history(sessions, r.id))
              for k, r in seeded.responses.items()}
    summary = _import(sessions, seeded.version.id, seeded.dataset.id,
                                           sheet)
    assert (summary.verdicts, summary.unchanged, summary.blank) == (0, 18, 6)
    edited = sheet.replace("r5,cites,,,,", "r5,cites,UNMET,bo,no source,").replace(
        "r0,cites,MET,ana,checked r0", "r0,cites,UNMET,bo,the link is dead")
    summary = _import(sessions, seeded.version.id, seeded.dataset.id,
                                           edited)
    assert (summary.verdicts, summary.responses, summary.unchanged, summary.blank) == (
        2, 2, 17, 5)
    after = {k: len(reviews.verdict_history(sessions, r.id))
             for k, r in seeded.responses.items()}
    assert {k: after[k] - before[k] for k in after} == {
        "r0": 1, "r1": 0, "r2": 0, "r3": 0, "r4": 0, "r5": 1}


def test_a_response_without_an_external_id_is_referenced_by_its_number(sessions):
    seeded = seed(sessions)
    [loose] = datasets.import_responses(sessions, seeded.dataset.id, [{"text": "no id here"}],
                                        actor=ADMIN)
    _import(
        sessions, seeded.version.id, seeded.dataset.id,
        f"response_id,criterion,verdict,reviewer\n#{loose},accurate,UNMET,bo\n")
    [saved] = reviews.current_verdicts(sessions, loose, seeded.version.id).values()
    assert (saved.verdict, saved.reviewer) == (V.UNMET, "bo")


def test_one_sheet_carries_several_reviewers_on_the_same_criterion(sessions):
    seeded = seed(sessions)
    sheet = ("response_id,criterion,verdict,reviewer,note\n"
             "r5,cites,MET,bo,in the footnote\n"
             "r5,cites,UNMET,cy,a blog\n"
             "r5,accurate,MET,bo,\n"
             "r5,accurate,MET,cy,\n")
    summary = _import(sessions, seeded.version.id, seeded.dataset.id, sheet)
    assert (summary.verdicts, summary.reviewers) == (4, ("bo", "cy"))
    rid = seeded.responses["r5"].id
    accurate = seeded.version.criteria[0].id
    assert set(reviews.current_verdicts(sessions, rid, seeded.version.id)) == {accurate}
    exported = labels.export_verdict_sheet_csv(sessions, seeded.version.id, seeded.dataset.id)
    assert "r5,cites,MET,bo,in the footnote," in exported
    assert "r5,cites,UNMET,cy,a blog," in exported
    # the exported sheet imports again as it is: nothing changes
    again = _import(sessions, seeded.version.id, seeded.dataset.id, exported)
    assert again.verdicts == 0
    [gold] = [r for r in labels.iter_gold_records(sessions, seeded.version.id,
                                                  seeded.dataset.id)
              if r["response_id"] == "r5"]
    cites_item = gold["rubrics"][1]
    assert (cites_item["status"], cites_item["verdict"]) == ("disputed", None)
    assert [(r["reviewer"], r["verdict"], r["note"]) for r in cites_item["reviewers"]] == [
        ("bo", "MET", "in the footnote"), ("cy", "UNMET", "a blog")]
    assert (gold["rubrics"][0]["status"], gold["rubrics"][0]["verdict"]) == ("agreed", "MET")


def test_a_bad_reviewer_cell_is_refused_and_nothing_is_written(sessions):
    seeded = seed(sessions)
    sheet = ("response_id,criterion,verdict,reviewer\n"
             "r5,cites,MET,bo\n"
             f"r5,accurate,MET,{'x' * 201}\n")
    with pytest.raises(ImportProblemsError) as caught:
        _import(sessions, seeded.version.id, seeded.dataset.id, sheet)
    problems = [str(p) for p in caught.value.problems]
    assert len(problems) == 1
    assert problems[0].startswith("row 2 (line 3), column 'reviewer': the value")
    assert reviews.verdict_history(sessions, seeded.responses["r5"].id) == []


def test_importing_other_reviewers_verdicts_needs_an_admin(sessions):
    from storage.services.reviewers import Actor, PermissionDeniedError, Role

    seeded = seed(sessions)
    dee = Actor(key="dee", name="Dee", roles=frozenset({Role.REVIEWER}))
    own = "response_id,criterion,verdict,reviewer\nr5,cites,MET,dee\n"
    other = "response_id,criterion,verdict,reviewer\nr5,cites,MET,bo\n"
    with pytest.raises(PermissionDeniedError, match="import verdicts for other reviewers"):
        labels.import_human_verdicts(sessions, seeded.version.id, seeded.dataset.id, other,
                                     actor=dee)
    assert labels.import_human_verdicts(sessions, seeded.version.id, seeded.dataset.id, own,
                                        actor=dee).verdicts == 1


def test_gold_scores_with_a_length_penalty_are_the_human_scores_with_it(sessions):
    from grading.types import LengthPenalty, ScoringSettings

    seeded = seed(sessions)
    settings = ScoringSettings(length_penalty=LengthPenalty(free_budget=1, max_cap=4,
                                                             penalty_at_cap=0.3))
    records = list(labels.iter_gold_records(sessions, seeded.version.id, seeded.dataset.id,
                                            settings=settings))
    expected = reviews.human_scores(sessions, seeded.version.id,
                                    [r["workbench_response_id"] for r in records], settings)
    plain = reviews.human_scores(sessions, seeded.version.id,
                                 [r["workbench_response_id"] for r in records])
    assert [(r["human_score"], r["human_raw_score"], r["reviewed_count"]) for r in records] == [
        (s.score, s.raw_score, s.reviewed_count) for s in expected]
    assert [s.score for s in expected] != [s.score for s in plain]  # the penalty counted
