"""Calibrated runs on rubrics with multi-choice criteria: the examples are people's agreed or
adjudicated options, balanced across the options, recorded with the option at launch.

Every test runs on SQLite and PostgreSQL (the ``sessions`` fixture)."""

from __future__ import annotations

import pytest

from grading import Criterion
from grading.options import CriterionOption as O
from storage.run_settings import CalibrationSettings
from storage.services import calibration, reviews, rubrics, runs
from storage.services.calibration import CalibrationRefusedError
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import make_dataset

THREE = (O(label="Poor", value=0.0), O(label="Fair", value=0.5), O(label="Good", value=1.0),
         O(label="N/A", value=0.0, na=True))
CRITERIA = [Criterion(name="dose", requirement="States the dose", weight=5),
            Criterion(name="clarity", requirement="How clear is it?", weight=5,
                      options=THREE)]
ANA, BO = local_actor("ana"), local_actor("bo")
CYCLE = ("Poor", "Fair", "Good")


def _setup(sessions, count: int = 12, criteria=CRITERIA):
    version = rubrics.create_rubric(sessions, "Dosing", criteria, actor=ADMIN)
    dataset, responses = make_dataset(sessions, count=count)
    return version, dataset, responses


def _review(sessions, version, responses, pattern, *, actor=ANA):
    """pattern(i, c) -> the answer per criterion index, or None to leave it unreviewed."""
    for i, response in enumerate(responses):
        for c, criterion in enumerate(version.criteria):
            answer = pattern(i, c)
            if answer is not None:
                reviews.set_human_verdict(sessions, actor=actor, response_id=response.id,
                                          criterion_id=criterion.id, verdict=answer,
                                          note=f"note {i}/{c}")


def _pattern(i, c):
    return ("MET" if i % 2 else "UNMET") if c == 0 else CYCLE[i % 3]


def _launch(sessions, version, dataset, k=3, seed=0, grader="per_criterion"):
    return runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                           grader=grader, model="openai/judge",
                           settings={"calibration": {"k": k, "seed": seed}}, actor=ADMIN)


def test_a_mixed_rubric_draws_verdicts_and_options_in_one_launch(sessions):
    version, dataset, responses = _setup(sessions)
    _review(sessions, version, responses[:9], _pattern)
    counts = calibration.reviewed_counts(sessions, version.id)
    assert counts[1].options == (("Poor", 3), ("Fair", 3), ("Good", 3)) and counts[1].total == 9
    run = _launch(sessions, version, dataset, k=3, seed=2)
    used = calibration.list_run_examples(sessions, run.id)
    rated = [e for e in used if e.criterion_position == 1 and e.role == "example"]
    assert sorted(e.option for e in rated) == ["Fair", "Good", "Poor"]
    by_id = {r.id: i for i, r in enumerate(responses)}
    for e in rated:
        assert e.option == CYCLE[by_id[e.response_id] % 3]  # the option people chose
        assert e.verdict == "MET" and e.reason == f"note {by_id[e.response_id]}/1"
    assert {e.option for e in used if e.criterion_position == 0} == {None}
    assert sorted(e.verdict for e in used
                  if e.criterion_position == 0 and e.role == "example") in (
        ["MET", "MET", "UNMET"], ["MET", "UNMET", "UNMET"])
    # What the run loads is what it recorded, options included: the prompts show them.
    loaded = calibration.load_examples(sessions, run.id)
    assert sorted(e.option for e in loaded.sets[1].examples) == ["Fair", "Good", "Poor"]
    loaded.check([c for c in CRITERIA])


def test_disputed_options_na_options_and_abstentions_are_never_examples(sessions):
    version, _dataset, responses = _setup(sessions, count=6)
    clarity = version.criteria[1].id
    for i, (ana, bo) in enumerate([("Good", "Good"), ("Good", "Fair"), ("N/A", "N/A"),
                                   ("CANNOT_ASSESS", None), ("Poor", None), ("Fair", "Poor")]):
        for actor, answer in ((ANA, ana), (BO, bo)):
            if answer is not None:
                reviews.set_human_verdict(sessions, actor=actor, response_id=responses[i].id,
                                          criterion_id=clarity, verdict=answer)
    # An adjudication settles the last dispute, as it does for MET/UNMET.
    reviews.adjudicate(sessions, actor=ADMIN, response_id=responses[5].id,
                       criterion_id=clarity, verdict="Fair")
    [_, count] = calibration.reviewed_counts(sessions, version.id)
    assert count.options == (("Poor", 1), ("Fair", 1), ("Good", 1))


def test_too_few_names_the_criterion_and_the_count_per_option(sessions):
    version, dataset, responses = _setup(sessions)
    _review(sessions, version, responses[:4], _pattern)
    with pytest.raises(CalibrationRefusedError) as refused:
        _launch(sessions, version, dataset, k=5)
    message = str(refused.value)
    assert ("criterion 1 ('dose'): 4 (2 MET, 2 UNMET); criterion 2 ('clarity'): 4 "
            "(2 'Poor', 1 'Fair', 1 'Good')") in message
    assert "agreed or adjudicated MET/UNMET verdict or option" in message
    assert "Choose k of at most 4" in message
    assert runs.list_runs(sessions) == []


def test_the_launch_records_the_option_in_force_then_and_keeps_it(sessions):
    """Second tab: the preview drew 'Good' for a response, a reviewer changes it to 'Poor'
    before the launch. The launch draws again in its own transaction, so the run records
    'Poor'; a change after the launch does not alter what the run shows its judge."""
    version, dataset, responses = _setup(sessions, count=3)
    _review(sessions, version, responses,
            lambda i, c: ("MET" if i % 2 else "UNMET") if c == 0 else CYCLE[i])
    settings = CalibrationSettings(k=3, seed=0)
    preview = calibration.preview_examples(sessions, version.id, "per_criterion", settings)
    assert sorted(e.option for e in preview.sets[1].examples) == ["Fair", "Good", "Poor"]
    reviews.set_human_verdict(sessions, actor=ANA, response_id=responses[2].id,
                              criterion_id=version.criteria[1].id, verdict="Poor")
    run = _launch(sessions, version, dataset, k=3)
    recorded = {e.response_id: e.option for e in calibration.list_run_examples(sessions, run.id)
                if e.criterion_position == 1}
    assert recorded[responses[2].id] == "Poor"
    assert sorted(recorded.values()) == ["Fair", "Poor", "Poor"]
    reviews.set_human_verdict(sessions, actor=ANA, response_id=responses[2].id,
                              criterion_id=version.criteria[1].id, verdict="Good")
    again = calibration.load_examples(sessions, run.id)
    assert {e.response_key: e.option for e in again.sets[1].examples}[responses[2].id] == "Poor"


def test_a_new_version_with_other_options_counts_only_the_options_it_still_has(sessions):
    """Verdicts carry by requirement text; an option the new version dropped, or a MET/UNMET
    given when the criterion was binary, is not an example of the rated criterion."""
    binary_first = [CRITERIA[0], Criterion(name="clarity", requirement="How clear is it?",
                                           weight=5)]
    version, dataset, responses = _setup(sessions, count=9, criteria=binary_first)
    _review(sessions, version, responses[:3], lambda i, c: "MET")
    runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                    grader="per_criterion", model="openai/judge", actor=ADMIN)  # freezes v1
    v2 = rubrics.save_criteria(sessions, version.id, CRITERIA, actor=ADMIN)
    assert calibration.reviewed_counts(sessions, v2.id)[1].options == (
        ("Poor", 0), ("Fair", 0), ("Good", 0))
    _review(sessions, v2, responses[3:9], lambda i, c: "MET" if c == 0 else CYCLE[i % 3])
    runs.create_run(sessions, rubric_version_id=v2.id, dataset_id=dataset.id,
                    grader="per_criterion", model="openai/judge", actor=ADMIN)  # freezes v2
    renamed = (O(label="poor", value=0.0), O(label="Okay", value=0.5),
               O(label="Good", value=1.0))
    v3 = rubrics.save_criteria(
        sessions, v2.id, [CRITERIA[0], CRITERIA[1].model_copy(update={"options": renamed})],
        actor=ADMIN)
    # 'Poor' matches 'poor' (labels compare as the graders compare them) and shows as the
    # new version spells it; 'Fair' is gone.
    [_, count] = calibration.reviewed_counts(sessions, v3.id)
    assert count.options == (("poor", 2), ("Okay", 0), ("Good", 2))
    run = _launch(sessions, v3, dataset, k=4)
    shown = [e.option for e in calibration.list_run_examples(sessions, run.id)
             if e.criterion_position == 1 and e.role == "example"]
    assert sorted(shown) == ["Good", "Good", "poor", "poor"]
    assert calibration.counts_for_rubric_file(
        sessions, "Dosing", [CRITERIA[0], CRITERIA[1].model_copy(update={"options": renamed})]
    )[1].options == (("poor", 2), ("Okay", 0), ("Good", 2))
