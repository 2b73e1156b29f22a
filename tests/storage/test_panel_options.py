"""A judge panel over a rubric mixing binary and multi-choice criteria, on SQLite and
PostgreSQL: ratings combine by median, categories by mode (ties to the worse option), the
decision carries the chosen label, the score is the one aggregation's over the decided labels,
and exports, Results columns, Agreement sources and member agreement read the label."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from storage import exports
from storage.panel_commands import panel_records
from storage.services import datasets, panel_results, panels, runs
from storage.services.grade_records import record_grade
from tests.actors import ADMIN
from tests.storage.helpers import make_rubric, make_run
from tests.storage.test_criterion_kinds_reviews import CRITERIA, RUBRIC, _judge_report


def _setup(sessions, members: list[list[str]], *, responses: int = 1):
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(responses)], actor=ADMIN)
    found = datasets.list_responses(sessions, dataset.id, limit=None)
    judges = [make_run(sessions, version.id, dataset.id).id for _ in members]
    return version, dataset, found, judges


def _by_name(grade, version):
    names = {c.id: c.name for c in version.criteria}
    return {names[row.criterion_id]: row for row in grade.criteria}


def test_ratings_take_the_median_categories_the_mode_and_the_score_reads_the_labels(sessions):
    votes = [["MET", "Fair", "formal"], ["MET", "Good", "casual"],
             ["UNMET", "Excellent", "casual"]]
    version, dataset, [response], judges = _setup(sessions, votes)
    for run_id, choices in zip(judges, votes, strict=True):
        record_grade(sessions, run_id, response.id, _judge_report(choices))
    panel = panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN)

    [grade] = panels.panel_grades(sessions, panel.id)
    rows = _by_name(grade, version)
    assert (rows["clarity"].decision.option, rows["clarity"].decision.choice) == ("Good", "Good")
    assert rows["clarity"].decision.note.startswith("median (")
    assert rows["tone"].decision.choice == "casual"
    assert rows["accurate"].decision.choice.value == "MET"
    assert rows["clarity"].member_verdicts == ("Fair", "Good", "Excellent")
    assert (grade.error, grade.complete) == (None, True)
    expected = RUBRIC.compute_score(["MET", "Good", "casual"])
    assert grade.score == pytest.approx(expected)
    # not the score that reads every chosen option as MET
    assert grade.score != pytest.approx(RUBRIC.compute_score(["MET", "Excellent", "formal"]))

    [result] = panel_results.panel_results(sessions, panel.id)
    assert result.effective.score == pytest.approx(expected)
    assert [c.judge_choice for c in result.effective.criteria][1:] == ["Good", "casual"]

    [column] = panel_results.panel_columns(sessions, dataset_id=dataset.id,
                                           rubric_version_id=version.id, panel_ids=[panel.id])
    ids = {c.name: c.id for c in version.criteria}
    assert column.verdicts[response.id, ids["clarity"]] == "Good"
    assert column.verdicts[response.id, ids["accurate"]] == "MET"
    [source] = panel_results.panel_sources(sessions, version.id, dataset.id)
    assert source.verdicts[response.id, ids["tone"]] == "casual"

    [record] = list(panel_records(sessions, panel.id))
    clarity = next(c for c in record["criteria"] if c["criterion"] == "clarity")
    assert (clarity["verdict"], clarity["members"]) == ("Good", ["Fair", "Good", "Excellent"])
    [exported] = list(exports.iter_panel_records(sessions, [panel.id]))
    by_name = {c["name"]: c for c in exported["criteria"]}
    assert by_name["clarity"]["effective_verdict"] == "Good"
    assert by_name["tone"]["judge_verdict"] == "casual"
    assert exported["score"] == pytest.approx(expected)


def test_an_even_split_goes_to_the_worse_option_and_na_abstains(sessions):
    votes = [["MET", "Fair", "no text"], ["MET", "Excellent", "formal"]]
    version, _dataset, [response], judges = _setup(sessions, votes)
    for run_id, choices in zip(judges, votes, strict=True):
        record_grade(sessions, run_id, response.id, _judge_report(choices))
    panel = panels.create_panel(sessions, run_ids=judges, rule="unanimous", actor=ADMIN)
    [grade] = panels.panel_grades(sessions, panel.id)
    rows = _by_name(grade, version)
    assert (rows["clarity"].decision.choice, rows["clarity"].decision.tie) == ("Fair", True)
    # the NA option abstains: the one scored option is the mode
    assert rows["tone"].decision.choice == "formal"
    assert grade.score == pytest.approx(RUBRIC.compute_score(["MET", "Fair", "formal"]))


def test_every_member_abstaining_makes_the_panel_abstain(sessions):
    votes = [["MET", "Good", "no text"], ["MET", "Good", "no text"]]
    version, _dataset, [response], judges = _setup(sessions, votes)
    for run_id, choices in zip(judges, votes, strict=True):
        record_grade(sessions, run_id, response.id, _judge_report(choices))
    panel = panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN)
    [grade] = panels.panel_grades(sessions, panel.id)
    tone = _by_name(grade, version)["tone"].decision
    assert (tone.verdict.value, tone.option) == ("CANNOT_ASSESS", None)
    # skipped, as the NA option is under the default "skip" strategy
    assert grade.score == pytest.approx(RUBRIC.compute_score(["MET", "Good", "no text"]))
    assert grade.score == pytest.approx((10 + 5 * 0.5) / (10 + 5))  # tone left out


def test_a_member_still_grading_leaves_a_rating_it_could_swing_undecided(sessions):
    votes = [["MET", "Fair", "formal"], ["MET", "Excellent", "formal"], ["MET", "Good", "casual"]]
    version, _dataset, [response], judges = _setup(sessions, votes)
    for run_id, choices in zip(judges[:2], votes[:2], strict=True):
        record_grade(sessions, run_id, response.id, _judge_report(choices))
    for run_id in judges:
        runs.start_run(sessions, run_id)
    for run_id in judges[:2]:
        runs.finish_run(sessions, run_id)
    panel = panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN)

    [grade] = panels.panel_grades(sessions, panel.id)
    rows = _by_name(grade, version)
    assert grade.pending_members == (judges[2],)
    # Fair and Excellent so far: the third rating decides the median
    assert rows["clarity"].decision.choice is None
    assert rows["clarity"].decision.note.startswith(f"undecided: waiting for run #{judges[2]}")
    # two of three chose formal: whatever the third says, formal is the mode
    assert rows["tone"].decision.choice == "formal"
    assert rows["tone"].decision.note.startswith(f"formal whatever run #{judges[2]}")
    assert grade.score is None
    assert grade.error.startswith(f"incomplete: waiting for run #{judges[2]}")
    assert "clarity" in grade.error and "tone" not in grade.error

    # the member finishes: the record is complete and scored over the labels
    record_grade(sessions, judges[2], response.id, _judge_report(votes[2]))
    [grade] = panels.panel_grades(sessions, panel.id)
    assert grade.complete and grade.error is None
    assert _by_name(grade, version)["clarity"].decision.choice == "Good"
    assert grade.score == pytest.approx(RUBRIC.compute_score(["MET", "Good", "formal"]))


def test_member_agreement_on_a_rating_is_ordinal_alpha_on_the_options(sessions):
    # three responses; the two members are one step apart on most ratings (every vote is
    # stored as MET, so an alpha over verdicts would read perfect agreement)
    clarity = [("Fair", "Good"), ("Good", "Good"), ("Poor", "Very good")]
    votes = [[["MET", a, "formal"] for a, _ in clarity], [["MET", b, "formal"]
                                                          for _, b in clarity]]
    _version, _dataset, found, judges = _setup(sessions, votes, responses=3)
    for run_id, per_member in zip(judges, votes, strict=True):
        for response, choices in zip(found, per_member, strict=True):
            record_grade(sessions, run_id, response.id, _judge_report(choices))
    panel = panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN)
    agreement = {a.label: a for a in panels.member_agreement(sessions, panel.id)}
    rank = {"Poor": 0, "Fair": 1, "Good": 2, "Very good": 3, "Excellent": 4}
    expected = krippendorff.alpha(
        reliability_data=np.array([[rank[a] for a, _ in clarity],
                                   [rank[b] for _, b in clarity]], dtype=float),
        level_of_measurement="ordinal", value_domain=list(range(5)))
    assert agreement["clarity"].alpha == pytest.approx(expected)
    assert agreement["clarity"].alpha < 1
    assert agreement["clarity"].units == 3
