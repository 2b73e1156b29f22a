"""Rubrics and versions: round trips, freezing, new versions, import/export, archive/delete."""

from __future__ import annotations

import pytest

from grading.errors import RubricValidationError
from grading.rubric import Rubric
from grading.types import Criterion
from storage.errors import ConfirmationRequiredError, HumanVerdictsExistError, NameTakenError
from storage.services import datasets, reviews, rubrics, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, make_dataset, make_rubric, make_run


def test_rubric_round_trip_keeps_order_sections_and_negative_weights(sessions):
    created = make_rubric(sessions)
    loaded = rubrics.get_version(sessions, created.id)
    assert loaded == created
    assert loaded.number == 1 and not loaded.frozen and loaded.rubric_name == "Dosing"
    assert loaded.to_criteria() == CRITERIA
    assert [c.position for c in loaded.criteria] == [0, 1, 2, 3]
    [info] = rubrics.list_rubrics(sessions)
    assert (info.name, info.version_count, info.latest_version_id) == ("Dosing", 1, created.id)


def test_rubric_names_are_unique(sessions):
    make_rubric(sessions, "Same")
    with pytest.raises(NameTakenError, match="already exists"):
        make_rubric(sessions, "Same")
    assert len(rubrics.list_rubrics(sessions)) == 1


def test_invalid_criteria_are_refused_with_every_problem(sessions):
    bad = [Criterion(name="a", requirement="x"), Criterion(name="a", requirement="y")]
    with pytest.raises(RubricValidationError, match="already used"):
        rubrics.create_rubric(sessions, "Dupes", bad, actor=ADMIN)
    assert rubrics.list_rubrics(sessions) == []


def test_editing_an_unfrozen_version_changes_it_in_place(sessions):
    version = make_rubric(sessions)
    edited = rubrics.save_criteria(sessions, version.id, CRITERIA[:2], note="shorter", actor=ADMIN)
    assert edited.id == version.id and edited.number == 1
    assert rubrics.get_version(sessions, version.id).to_criteria() == CRITERIA[:2]


def test_first_grading_run_freezes_the_version_and_edits_create_a_new_one(sessions):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions)
    make_run(sessions, version.id, dataset.id)
    frozen = rubrics.get_version(sessions, version.id)
    assert frozen.frozen
    changed = [*CRITERIA[:3], Criterion(name="polite", requirement="Is polite", weight=1)]
    new = rubrics.save_criteria(sessions, version.id, changed, actor=ADMIN)
    assert (new.number, new.frozen) == (2, False) and new.id != version.id
    assert new.to_criteria() == changed
    assert rubrics.get_version(sessions, version.id).to_criteria() == CRITERIA
    assert rubrics.get_version(sessions, version.id).frozen_at == frozen.frozen_at
    assert [v.number for v in rubrics.list_versions(sessions, version.rubric_id)] == [1, 2]
    assert rubrics.latest_version(sessions, version.rubric_id).id == new.id


def test_a_human_verdict_freezes_the_version_too(sessions):
    version = make_rubric(sessions)
    _, [response, *_] = make_dataset(sessions)
    reviews.set_human_verdict(sessions, response_id=response.id,
                              criterion_id=version.criteria[0].id, verdict="MET",
                              actor=local_actor("ana"))
    assert rubrics.get_version(sessions, version.id).frozen
    assert rubrics.save_criteria(sessions, version.id, CRITERIA[:1], actor=ADMIN).id != version.id


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_export_and_import_round_trip_through_grading_writers(sessions, fmt):
    version = make_rubric(sessions)
    text = rubrics.export_version(sessions, version.id, fmt)
    assert text == getattr(Rubric(CRITERIA), f"to_{fmt}")()
    imported = rubrics.import_rubric(sessions, "Copy", text, filename=f"copy.{fmt}", actor=ADMIN)
    assert imported.to_criteria() == CRITERIA


def test_import_of_an_invalid_file_writes_nothing_and_lists_the_problems(sessions):
    text = "- requirement: ''\n  weight: 1\n- weight: zwei\n  requirement: ok\n"
    with pytest.raises(RubricValidationError) as caught:
        rubrics.import_rubric(sessions, "Broken", text, filename="broken.yaml", actor=ADMIN)
    assert len(caught.value.problems) == 2
    assert "line 1" in caught.value.problems[0] and "line 3" in caught.value.problems[1]
    assert rubrics.list_rubrics(sessions) == []


def test_archived_rubrics_leave_the_default_list_but_keep_everything(sessions):
    version = make_rubric(sessions)
    rubrics.archive_rubric(sessions, version.rubric_id, actor=ADMIN)
    assert rubrics.list_rubrics(sessions) == []
    [info] = rubrics.list_rubrics(sessions, include_archived=True)
    assert info.archived
    assert rubrics.get_version(sessions, version.id).to_criteria() == CRITERIA
    rubrics.archive_rubric(sessions, version.rubric_id, archived=False, actor=ADMIN)
    assert len(rubrics.list_rubrics(sessions)) == 1


def test_rename_refuses_a_taken_name(sessions):
    a = make_rubric(sessions, "A")
    make_rubric(sessions, "B")
    with pytest.raises(NameTakenError):
        rubrics.rename_rubric(sessions, a.rubric_id, "B", actor=ADMIN)
    rubrics.rename_rubric(sessions, a.rubric_id, "C", actor=ADMIN)
    assert [r.name for r in rubrics.list_rubrics(sessions)] == ["B", "C"]


def test_deleting_an_unused_rubric_needs_no_confirmation(sessions):
    version = make_rubric(sessions)
    summary = rubrics.delete_rubric(sessions, version.rubric_id, actor=ADMIN)
    assert summary.runs == 0
    assert rubrics.list_rubrics(sessions, include_archived=True) == []


def test_deleting_a_rubric_with_results_needs_confirmation(sessions):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions)
    make_run(sessions, version.id, dataset.id)
    with pytest.raises(ConfirmationRequiredError, match="archive"):
        rubrics.delete_rubric(sessions, version.rubric_id, actor=ADMIN)
    assert len(rubrics.list_rubrics(sessions)) == 1
    summary = rubrics.delete_rubric(sessions, version.rubric_id, confirm=True, actor=ADMIN)
    assert summary.runs == 1
    assert runs.list_runs(sessions) == []
    assert datasets.get_dataset(sessions, dataset.id).response_count == 3


def test_deleting_a_rubric_never_removes_human_verdicts_without_saying_so(sessions):
    version = make_rubric(sessions)
    _, [response, *_] = make_dataset(sessions)
    reviews.set_human_verdict(sessions, response_id=response.id,
                              criterion_id=version.criteria[0].id, verdict="MET",
                              actor=local_actor("ana"))
    with pytest.raises(HumanVerdictsExistError, match="1 human verdict,"):
        rubrics.delete_rubric(sessions, version.rubric_id, confirm=True, actor=ADMIN)
    assert len(reviews.verdict_history(sessions, response.id)) == 1
    summary = rubrics.delete_rubric(sessions, version.rubric_id, confirm=True,
                                    delete_human_verdicts=True, actor=ADMIN)
    assert summary.human_verdicts == 1
    assert reviews.verdict_history(sessions, response.id) == []


def test_saving_a_draft_changed_since_the_edit_began_is_refused(sessions):
    from grading.options import CriterionOption
    from storage.errors import InvalidStateError

    created = make_rubric(sessions)
    started_from = created.to_criteria()
    elsewhere = [c.model_copy(update={"weight": 3.0}) for c in started_from]
    rubrics.save_criteria(sessions, created.id, elsewhere, expected=started_from, actor=ADMIN)
    mine = [started_from[0].model_copy(update={"options": tuple(
        CriterionOption(label=label, value=value) for label, value in
        (("Poor", 0.0), ("Fair", 0.5), ("Good", 1.0)))}),
            *started_from[1:]]
    with pytest.raises(InvalidStateError, match="version 1 was changed elsewhere"):
        rubrics.save_criteria(sessions, created.id, mine, expected=started_from, actor=ADMIN)
    assert rubrics.get_version(sessions, created.id).to_criteria() == elsewhere
    # Starting from what is saved now, the same edit goes through, options and all.
    rubrics.save_criteria(sessions, created.id, mine, expected=elsewhere, actor=ADMIN)
    assert rubrics.get_version(sessions, created.id).to_criteria() == mine
