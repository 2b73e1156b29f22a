"""AppTest: the Rubrics page — create, edit in the table, validation, versions, diff, import."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from grading.types import Criterion
from storage.services import datasets, rubrics
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.ui.pages import APP, SAMPLES, db, frame_with, frames, open_page, texts, unescape

SAMPLE = (SAMPLES / "sample_rubric.yaml").read_text()


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _seed(criteria=None, *, frozen=False):
    sessions = db()
    version = rubrics.create_rubric(sessions, "Support", criteria or [
        Criterion(name="refund", requirement="States the refund window", weight=10),
        Criterion(name="order", requirement="Asks for the order number", weight=5),
    ], actor=ADMIN)
    if frozen:
        rubrics.freeze_version(sessions, version.id, actor=ADMIN)
    return version


def _editor_key(version_id: int, nonce: int = 0) -> str:
    return f"rubrics_editor_{version_id}_{nonce}"


def test_empty_state_invites_to_create_or_import():
    at = open_page("rubrics")
    assert "No rubrics yet" in texts(at)
    assert [b.label for b in at.button][:2] == ["Create rubric", "Import"]


def test_create_rubric_selects_it_with_its_first_criterion():
    at = open_page("rubrics")
    at.text_input[0].input("Refund replies")
    at.text_input[2].input("States the refund window")
    at.number_input[0].set_value(8)
    next(b for b in at.button if b.label == "Create rubric").click().run()
    assert not at.exception
    assert "Created 'Refund replies'" in texts(at)
    [info] = rubrics.list_rubrics(db())
    version = rubrics.latest_version(db(), info.id)
    assert [(c.requirement, c.weight) for c in version.criteria] == [
        ("States the refund window", 8.0)]
    assert at.selectbox(key="rubrics_selected_id").value == info.id


def test_create_without_a_requirement_says_what_is_missing():
    at = open_page("rubrics")
    at.text_input[0].input("Nameless criterion")
    next(b for b in at.button if b.label == "Create rubric").click().run()
    assert "Write the first criterion's requirement" in texts(at)
    assert rubrics.list_rubrics(db()) == []


# A row added in the editor arrives with no "required" value: the table's columns must hold
# it without pandas' deprecated silent cast (an error in pandas 4).
@pytest.mark.filterwarnings("error::pandas.errors.Pandas4Warning")
def test_edits_in_the_table_are_saved_with_a_penalty_added_and_a_row_deleted():
    version = _seed()
    at = open_page("rubrics")
    at.session_state[_editor_key(version.id)] = {
        "edited_rows": {0: {"weight": 12}},
        "added_rows": [{"position": 3, "name": "blame", "requirement": "Blames the customer",
                        "weight": -6, "section": "Tone"}],
        "deleted_rows": [1],
    }
    at.run()
    assert not at.exception
    assert ":material/remove_circle: blame -6" in texts(at)
    assert at.button(key="rubrics_save").disabled is False
    at.button(key="rubrics_save").click().run()
    assert not at.exception
    saved = rubrics.latest_version(db(), version.rubric_id)
    assert saved.id == version.id  # a draft is edited in place
    assert [(c.name, c.weight, c.section) for c in saved.criteria] == [
        ("refund", 12.0, None), ("blame", -6.0, "Tone")]
    assert "Saved 2 criteria" in texts(at)


def test_changing_positions_reorders_the_criteria():
    version = _seed()
    at = open_page("rubrics")
    at.session_state[_editor_key(version.id)] = {
        "edited_rows": {0: {"position": 5}}, "added_rows": [], "deleted_rows": []}
    at.run()
    at.button(key="rubrics_save").click().run()
    saved = rubrics.latest_version(db(), version.rubric_id)
    assert [c.name for c in saved.criteria] == ["order", "refund"]


def test_live_summary_uses_the_edited_weights():
    version = _seed()
    at = open_page("rubrics")
    at.session_state[_editor_key(version.id)] = {
        "edited_rows": {1: {"weight": -5}}, "added_rows": [], "deleted_rows": []}
    at.run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"Positive weight": "10", "Penalty weight": "5",
                       "Best response": "1.00", "Worst response": "0.00"}
    assert "scores 0.50" in texts(at)  # every criterion MET: (10 - 5) / 10


def test_a_missing_weight_is_shown_beside_its_row_and_nothing_is_saved():
    version = _seed()
    at = open_page("rubrics")
    at.session_state[_editor_key(version.id)] = {
        "edited_rows": {1: {"weight": None, "name": "refund"}}, "added_rows": [],
        "deleted_rows": []}
    at.run()
    assert not at.exception
    assert "2 problems to fix before saving — nothing has been saved" in texts(at)
    problems = frames(at)[-1]
    assert problems.to_dict("records") == [
        {"Row": 2, "Criterion": "'refund'", "Column": "weight",
         "Problem": "a weight is needed (positive earns points, negative is a penalty)"},
        {"Row": 2, "Criterion": "'refund'", "Column": "name",
         "Problem": "'refund' is already used by row 1"},
    ]
    assert at.button(key="rubrics_save").disabled
    assert [c.weight for c in rubrics.latest_version(db(), version.rubric_id).criteria] == [
        10.0, 5.0]


def test_an_empty_requirement_is_named_by_row():
    version = _seed()
    at = open_page("rubrics")
    at.session_state[_editor_key(version.id)] = {
        "edited_rows": {}, "added_rows": [{"name": "tone", "weight": 2}], "deleted_rows": []}
    at.run()
    assert "Row 3 ('tone') · requirement" in "\n".join(
        f"Row {r['Row']} ({r['Criterion']}) · {r['Column']}" for r in
        frames(at)[-1].to_dict("records"))
    assert at.button(key="rubrics_save").disabled


def test_a_frozen_version_is_read_only_until_edit_as_new_version():
    version = _seed(frozen=True)
    at = open_page("rubrics")
    assert "Version 1 is frozen" in texts(at)
    assert _editor_key(version.id) not in at.session_state
    assert "rubrics_save" not in [b.key for b in at.button]
    kinds = frame_with(at, "kind")["kind"].tolist()
    assert kinds == ["earns", "earns"]

    at.button(key="rubrics_unlock").click().run()
    assert "Editing a copy of frozen version 1" in texts(at)
    at.session_state[_editor_key(version.id)] = {
        "edited_rows": {1: {"weight": -3}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert at.button(key="rubrics_save").label == "Save as new version"
    at.button(key="rubrics_save").click().run()
    assert not at.exception
    versions = rubrics.list_versions(db(), version.rubric_id)
    by_number = {v.number: v for v in versions}
    assert [c.weight for c in by_number[1].criteria] == [10.0, 5.0]
    assert [c.weight for c in by_number[2].criteria] == [10.0, -3.0]
    assert "Saved as version 2. Version 1 is unchanged." in texts(at)
    assert at.selectbox(key="rubrics_version_id").value == by_number[2].id


def test_freeze_button_locks_a_draft():
    version = _seed()
    at = open_page("rubrics")
    at.button(key="rubrics_freeze").click().run()
    assert rubrics.get_version(db(), version.id).frozen
    assert "Version 1 is frozen" in texts(at)


def test_diff_between_two_versions_lists_added_removed_and_changed():
    version = _seed(frozen=True)
    rubrics.save_criteria(db(), version.id, [
        Criterion(name="refund", requirement="States the refund window", weight=8),
        Criterion(name="empathy", requirement="Acknowledges the frustration", weight=4),
    ], actor=ADMIN)
    at = open_page("rubrics")
    assert "v1 → v2" in texts(at)
    diff = frames(at)[-1]
    assert diff[["Change", "Criterion", "Details"]].to_dict("records") == [
        {"Change": "changed", "Criterion": "refund", "Details": "weight 10 → 8"},
        {"Change": "added", "Criterion": "empathy", "Details": ""},
        {"Change": "removed", "Criterion": "order", "Details": ""},
    ]


def test_a_reworded_requirement_shows_old_and_new_wording_word_by_word():
    long_tail = " and names the days it takes, " + "in plain words " * 12 + "[link](x) *done*"
    version = _seed([Criterion(name="refund", requirement="States the refund window"
                               + long_tail, weight=10)], frozen=True)
    rubrics.save_criteria(db(), version.id, [
        Criterion(name="refund", requirement="States the return window" + long_tail,
                  weight=10)], actor=ADMIN)
    at = open_page("rubrics")
    shown = [m.value for m in at.markdown]
    old = next(m for m in shown if m.startswith("Old: "))
    new = next(m for m in shown if m.startswith("New: "))
    assert ":red-background[~~refund~~]" in old and "return" not in old
    assert ":green-background[**return**]" in new and "refund" not in new
    # the whole wording, with the user's markup escaped, not cut off
    assert unescape(old).endswith("[link](x) *done*")
    assert "\\[link\\]" in old and "\\*done\\*" in new


def test_single_version_explains_when_versions_appear():
    _seed()
    at = open_page("rubrics")
    assert "Only one version so far" in texts(at)


def test_import_pasted_yaml_with_sections_and_penalties():
    at = open_page("rubrics")
    at.text_input[3].input("Imported")
    at.text_area[0].input(SAMPLE)
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert "Imported 'Imported' with 5 criteria" in texts(at)
    [info] = rubrics.list_rubrics(db())
    version = rubrics.latest_version(db(), info.id)
    assert [c.weight for c in version.criteria] == [10, 6, -8, 4, -5]
    assert {c.section for c in version.criteria} == {"Accuracy", "Tone"}


def test_import_uploaded_json_file_takes_the_file_name():
    at = open_page("rubrics")
    at.get("file_uploader")[0].upload(
        "tone.json", b'[{"name": "polite", "requirement": "Is polite", "weight": 3}]',
        "application/json")
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert [r.name for r in rubrics.list_rubrics(db())] == ["tone"]


def test_a_files_own_name_names_the_rubric_when_none_is_typed():
    at = open_page("rubrics")
    at.text_area[0].input("name: Dosing guide\ncriteria:\n"
                          "  - {name: dose, weight: 2, requirement: States the dose}\n")
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert "Imported 'Dosing guide' (the name the file gives) with 1 criterion" in texts(at)
    assert [r.name for r in rubrics.list_rubrics(db())] == ["Dosing guide"]


def test_a_typed_name_wins_over_the_files_and_the_page_says_so():
    at = open_page("rubrics")
    at.text_input[3].input("Mine")
    at.get("file_uploader")[0].upload(
        "tone.yaml", b"title: Tone check\ncriteria:\n  - {requirement: Is polite, weight: 1}\n",
        "application/yaml")
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert ("Imported 'Mine' — the file calls it 'Tone check'; the name you typed is used "
            "with 1 criterion") in texts(at)
    assert [r.name for r in rubrics.list_rubrics(db())] == ["Mine"]


def test_fields_the_rubric_does_not_use_are_named_after_the_import():
    """A file written for another tool (ids, rubric-style sections) imports, and the person is
    told which of its fields were not kept, with the criterion and line."""
    at = open_page("rubrics")
    at.text_input[3].input("From rubric")
    at.text_area[0].input(
        "rubric:\n  id: r1\n  sections:\n    - id: s1\n      title: Accuracy\n"
        "      criteria:\n        - id: c1\n          weight: 3\n"
        "          requirement: States the refund window\n          rationale: policy 4.2\n")
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    shown = texts(at)
    assert "Imported 'From rubric' with 1 criterion" in shown
    [warning] = [w.value for w in at.warning if "were ignored" in w.value]
    plain = unescape(warning)
    assert "criterion 1 at line 7: 'id', 'rationale'" in plain
    assert "not part of the saved rubric" in plain
    [info] = rubrics.list_rubrics(db())
    [criterion] = rubrics.latest_version(db(), info.id).criteria
    assert (criterion.weight, criterion.section) == (3, "Accuracy")


def test_a_clean_import_shows_no_ignored_fields_warning():
    at = open_page("rubrics")
    at.text_input[3].input("Clean")
    at.text_area[0].input("- {name: a, weight: 1, requirement: x}\n")
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert not [w for w in at.warning if "were ignored" in w.value]


def test_updating_from_a_file_with_unused_fields_names_them():
    version = _seed()
    at = open_page("rubrics")
    at.text_area[1].input(
        "- {name: refund, requirement: States the refund window, weight: 10, id: x1}\n")
    next(b for b in at.button if b.label == "Update from file").click().run()
    assert not at.exception
    [warning] = [w.value for w in at.warning if "were ignored" in w.value]
    assert "criterion 1 ('refund') at line 1: 'id'" in unescape(warning)
    assert len(rubrics.list_versions(db(), version.rubric_id)) >= 1


def test_invalid_yaml_lists_every_problem_with_its_line_and_imports_nothing():
    at = open_page("rubrics")
    at.text_input[3].input("Broken")
    at.text_area[0].input(
        "- name: a\n  weight: ten\n  requirement: x\n- name: a\n  weight: 1\n  requirement: ''\n")
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert "Nothing was imported: pasted text has 3 problems" in texts(at)
    problems = frames(at)[-1]["Problem"].tolist()
    assert any("line 1" in p and "weight must be a number" in p for p in problems)
    assert any("line 4" in p and "requirement must not be empty" in p for p in problems)
    assert rubrics.list_rubrics(db()) == []


def test_yaml_syntax_error_names_the_line():
    at = open_page("rubrics")
    at.text_input[3].input("Broken")
    at.text_area[0].input("criteria:\n  - name: [unclosed\n")
    next(b for b in at.button if b.label == "Import").click().run()
    assert "line 3" in " ".join(frames(at)[-1]["Problem"].tolist())
    assert rubrics.list_rubrics(db()) == []


def test_rename_and_archive_and_restore():
    version = _seed()
    at = open_page("rubrics")
    rename = next(t for t in at.text_input if t.label == "New name")
    rename.input("Support v2")
    next(b for b in at.button if b.label == "Rename").click().run()
    assert rubrics.list_rubrics(db())[0].name == "Support v2"

    at.button(key="rubrics_archive").click().run()
    assert rubrics.list_rubrics(db()) == []
    assert "Archived 'Support v2'" in texts(at)
    at.toggle(key="rubrics_show_archived").set_value(True).run()
    at.button(key="rubrics_restore").click().run()
    assert [r.id for r in rubrics.list_rubrics(db())] == [version.rubric_id]


def test_a_taken_name_is_explained():
    _seed()
    at = open_page("rubrics")
    at.text_input[0].input("Support")
    at.text_input[2].input("Anything")
    next(b for b in at.button if b.label == "Create rubric").click().run()
    assert "already exists; pick another name" in texts(at)


def test_export_offers_yaml_and_json_of_the_selected_version():
    _seed()
    at = open_page("rubrics")
    downloads = at.get("download_button")
    assert len(downloads) == 2
    code = at.code[0].value
    assert "requirement: States the refund window" in code


def test_a_new_rubric_is_offered_on_the_grade_page_at_once():
    datasets.create_dataset(db(), "Replies", responses=[{"text": "an answer"}], actor=ADMIN)
    at = open_page("grade")  # fills the Grade page's cached rubric list (empty)
    at.switch_page("app_pages/rubrics.py").run()
    at.text_input[0].input("Fresh rubric")
    at.text_input[2].input("Says hello")
    next(b for b in at.button if b.label == "Create rubric").click().run()
    at.switch_page("app_pages/grade.py").run()
    assert not at.exception
    offered = [option for box in at.selectbox for option in box.options]
    assert any("Fresh rubric" in option for option in offered)


def test_an_unreachable_database_is_explained_without_the_password(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATABASE_URL",
                       "postgresql+psycopg://user:s3cret-pw@127.0.0.1:9/workbench")
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    at.switch_page("app_pages/rubrics.py").run()
    assert not at.exception
    [error] = [unescape(e.value) for e in at.error]
    assert error.startswith("The database at postgresql+psycopg://user:***@127.0.0.1:9/"
                            "workbench cannot be reached")
    assert "RUBRIC_WORKBENCH_DATABASE_URL" in error
    assert "s3cret-pw" not in error


def test_a_database_variable_that_is_no_url_is_one_sentence(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATABASE_URL", "postgresql://me:s3cret@db:port/x")
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    at.switch_page("app_pages/rubrics.py").run()
    assert not at.exception
    [error] = [unescape(e.value) for e in at.error]
    assert error.startswith("RUBRIC_WORKBENCH_DATABASE_URL is not a database URL; give a "
                            "database URL (sqlite:///path/to/file.db")
    assert "s3cret" not in error


def test_delete_needs_a_confirmation_and_removes_the_rubric():
    version = _seed()
    at = open_page("rubrics")
    assert at.button(key="rubrics_delete").disabled
    at.checkbox(key=f"rubrics_delete_sure_{version.rubric_id}").check().run()
    at.button(key="rubrics_delete").click().run()
    assert not at.exception
    assert rubrics.list_rubrics(db(), include_archived=True) == []
    assert "Deleted 'Support' with 1 version, 0 grading runs and 0 grades." in texts(at)
    assert "No rubrics yet" in texts(at)


def test_updating_a_frozen_version_from_a_file_creates_a_new_version():
    version = _seed(frozen=True)
    at = open_page("rubrics")
    at.text_area[1].input(
        "- {name: refund, requirement: States the refund window, weight: 10}\n"
        "- {name: blame, requirement: Blames the customer, weight: -5}\n")
    next(b for b in at.button if b.label == "Update from file").click().run()
    assert not at.exception
    assert "Version 2 now holds the file's criteria: 1 added, 1 removed, 0 changed." in texts(at)
    [v1, v2] = sorted(rubrics.list_versions(db(), version.rubric_id), key=lambda v: v.number)
    assert [c.name for c in v1.criteria] == ["refund", "order"]
    assert [(c.name, c.weight) for c in v2.criteria] == [("refund", 10.0), ("blame", -5.0)]
    assert v2.note == "updated from pasted text"


def test_updating_from_an_identical_file_changes_nothing():
    version = _seed()
    at = open_page("rubrics")
    at.text_area[1].input(rubrics.export_version(db(), version.id))
    next(b for b in at.button if b.label == "Update from file").click().run()
    assert "No changes: the file matches version 1." in texts(at)
    assert len(rubrics.list_versions(db(), version.rubric_id)) == 1


def test_an_invalid_update_file_lists_its_problems_and_saves_nothing():
    version = _seed()
    at = open_page("rubrics")
    at.text_area[1].input("- {name: a, weight: ten, requirement: x}\n")
    next(b for b in at.button if b.label == "Update from file").click().run()
    assert "Nothing was imported: pasted text has 1 problem" in texts(at)
    assert [c.name for c in rubrics.latest_version(db(), version.rubric_id).criteria] == [
        "refund", "order"]


def test_a_rubric_with_human_verdicts_offers_only_archiving():
    """Issue 9 item 6, for rubrics: no Delete that then refuses in library wording."""
    from storage.services.reviews import set_human_verdict

    version = _seed()
    dataset = datasets.create_dataset(db(), "D", responses=[{"text": "a"}], actor=ADMIN)
    [response] = datasets.list_responses(db(), dataset.id)
    set_human_verdict(db(), response_id=response.id, criterion_id=version.criteria[0].id,
                      verdict="MET", actor=local_actor("ana"))
    at = open_page("rubrics")
    keys = {b.key for b in at.button} | {c.key for c in at.checkbox}
    assert "rubrics_delete" not in keys
    assert f"rubrics_delete_sure_{version.rubric_id}" not in keys
    shown = texts(at)
    assert "'Support' has 1 human verdict. People's verdicts are never deleted" in shown
    assert "delete_human_verdicts" not in shown
    at.button(key="rubrics_archive_instead").click().run()
    assert not at.exception
    [info] = rubrics.list_rubrics(db(), include_archived=True)
    assert info.archived
