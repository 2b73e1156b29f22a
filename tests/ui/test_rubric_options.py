"""AppTest: the Rubrics editor's rating and category criteria — presets, editing options,
required, the prompt preview, the version diff, bad input and a draft saved elsewhere."""

from __future__ import annotations

import pytest

from grading.option_prompts import option_order, option_user_prompt
from grading.options import CriterionOption
from grading.types import Criterion
from storage.services import rubrics
from tests.actors import ADMIN
from tests.ui.pages import db, frame_with, open_page, texts
from tests.ui.test_rubrics_page import _editor_key as _key
from tests.ui.test_rubrics_page import _seed
from ui import catalog
from ui.option_editor import PREVIEW_RESPONSE
from ui.option_presets import PRESETS

# Rows added in the option editor arrive with no "NA" value: the column must hold it
# without pandas' deprecated silent cast (an error in pandas 4).
pytestmark = pytest.mark.filterwarnings("error::pandas.errors.Pandas4Warning")


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


PASS_FAIL = PRESETS["Pass / partial / fail"]


def _edit(at, version_id, edited_rows, **more):
    at.session_state[_key(version_id)] = {"edited_rows": edited_rows,
                                          "added_rows": more.get("added", []),
                                          "deleted_rows": more.get("deleted", [])}


def _edit_options(at, version_id, row, gen=0, edited=None, added=(), deleted=()):
    at.session_state[f"{_key(version_id)}_options_{row}_{gen}"] = {
        "edited_rows": edited or {}, "added_rows": list(added), "deleted_rows": list(deleted)}


def _saved(version):
    return rubrics.latest_version(db(), version.rubric_id).criteria


def _problems(at):
    return frame_with(at, "Problem").to_dict("records")


@pytest.mark.parametrize("preset", list(PRESETS))
def test_each_preset_becomes_the_saved_options(preset):
    version = _seed()
    at = open_page("rubrics")
    kind = "category" if preset == "Categories (nominal)" else "rating"
    _edit(at, version.id, {0: {"judged_as": kind}})
    at.run()
    at.selectbox(key=f"{_key(version.id)}_preset_0").set_value(preset)
    at.button(key=f"{_key(version.id)}_use_preset_0").click().run()
    assert not at.exception
    at.button(key="rubrics_save").click().run()
    assert not at.exception, at.exception
    refund = _saved(version)[0]
    assert [(o.label, o.na) for o in refund.options] == [(o.label, o.na)
                                                        for o in PRESETS[preset]]
    assert [o.value for o in refund.options] == pytest.approx(
        [o.value for o in PRESETS[preset]], abs=1e-4)
    assert refund.scale_type == ("nominal" if kind == "category" else "ordinal")
    assert _saved(version)[1].options is None  # the other criterion stays MET/UNMET


def test_editing_options_of_a_frozen_version_saves_a_new_version_with_them():
    version = _seed([Criterion(name="refund", requirement="States the refund window",
                               weight=10, options=PASS_FAIL)], frozen=True)
    at = open_page("rubrics")
    at.button(key="rubrics_unlock").click().run()
    _edit(at, version.id, {0: {"required": True}})
    _edit_options(at, version.id, 0, edited={1: {"value": 0.6, "label": "Mostly"}},
                  added=[{"label": "Not asked", "na": True}])
    at.run()
    at.button(key="rubrics_save").click().run()
    assert not at.exception
    assert "Saved as version 2. Version 1 is unchanged." in texts(at)
    versions = {v.number: v for v in rubrics.list_versions(db(), version.rubric_id)}
    assert versions[1].criteria[0].options == PASS_FAIL
    new = versions[2].criteria[0]
    assert new.required
    assert [(o.label, o.value, o.na) for o in new.options] == [
        ("Fail", 0.0, False), ("Mostly", 0.6, False), ("Pass", 1.0, False),
        ("Not asked", 0.0, True)]


def test_an_option_row_added_without_na_saves_as_an_ordinary_option():
    version = _seed([Criterion(name="refund", requirement="States the refund window",
                               weight=10, options=PASS_FAIL, scale_type="ordinal")])
    at = open_page("rubrics")
    _edit_options(at, version.id, 0, added=[{"label": "Perfect", "value": 1}])
    at.run()
    at.button(key="rubrics_save").click().run()
    assert not at.exception
    assert [(o.label, o.na) for o in _saved(version)[0].options] == [
        ("Fail", False), ("Partial", False), ("Pass", False), ("Perfect", False)]


def test_saving_another_field_keeps_a_criterions_options():
    version = _seed([Criterion(name="refund", requirement="States the refund window",
                               weight=10, options=PASS_FAIL, scale_type="ordinal")])
    at = open_page("rubrics")
    _edit(at, version.id, {0: {"weight": 7}})
    at.run()
    at.button(key="rubrics_save").click().run()
    assert not at.exception
    [refund] = _saved(version)
    assert (refund.weight, refund.options) == (7.0, PASS_FAIL)


def test_the_prompt_preview_is_the_judges_option_prompt():
    version = _seed()
    at = open_page("rubrics")
    _edit(at, version.id, {0: {"judged_as": "rating"}})
    at.run()
    expected = Criterion(name="refund", requirement="States the refund window", weight=10,
                         options=PRESETS["Likert 1-5"])
    prompt = option_user_prompt(expected, PREVIEW_RESPONSE,
                                order=option_order(expected, shuffle=False))
    assert [c.value for c in at.code if c.language != "yaml"] == [prompt]
    assert "5 - Excellent" in prompt


def test_a_frozen_multi_choice_version_is_shown_with_its_options_and_diff():
    version = _seed([Criterion(name="refund", requirement="States the refund window",
                               weight=10, options=PASS_FAIL)], frozen=True)
    rubrics.save_criteria(db(), version.id, [
        Criterion(name="refund", requirement="States the refund window", weight=10,
                  required=True, options=(*PASS_FAIL[:2], CriterionOption(label="Pass",
                                                                          value=0.9)))],
        actor=ADMIN)
    at = open_page("rubrics")
    at.selectbox(key="rubrics_version_id").set_value(version.id).run()
    assert not at.exception
    shown = frame_with(at, "options")
    assert shown["options"].tolist() == ["Fail 0 · Partial 0.5 · Pass 1"]
    assert shown["judged_as"].tolist() == ["rating"]
    diff = frame_with(at, "Details")
    assert diff["Details"].tolist() == ["now required; option 'Pass' value 1 → 0.9"]


@pytest.mark.parametrize(("options_edit", "problem"), [
    ({"edited": {1: {"value": 1.5}}},
     "option 'Partial': the value must be between 0 and 1, got 1.5"),
    ({"edited": {1: {"label": "fail"}}}, "option label 'fail' is used twice (also as 'Fail')"),
    ({"deleted": [1, 2]},
     "an ordinal criterion needs at least two options that are not NA, got 1"),
])
def test_bad_options_name_the_criterion_and_save_nothing(options_edit, problem):
    version = _seed([Criterion(name="refund", requirement="States the refund window",
                               weight=10, options=PASS_FAIL)])
    at = open_page("rubrics")
    _edit(at, version.id, {0: {"weight": 8}})
    _edit_options(at, version.id, 0, **options_edit)
    at.run()
    assert not at.exception
    assert "to fix before saving — nothing has been saved" in texts(at)
    assert _problems(at) == [{"Row": 1, "Criterion": "'refund'", "Column": "options",
                              "Problem": problem}]
    assert at.button(key="rubrics_save").disabled
    assert _saved(version)[0].weight == 10.0


def test_required_with_weight_zero_is_named_and_nothing_saved():
    version = _seed()
    at = open_page("rubrics")
    _edit(at, version.id, {1: {"required": True, "weight": 0}})
    at.run()
    assert _problems(at) == [{
        "Row": 2, "Criterion": "'order'", "Column": "required",
        "Problem": "a required criterion needs a weight other than 0 (a gate on a criterion "
                   "that scores nothing)"}]
    assert at.button(key="rubrics_save").disabled
    assert not any(c.required for c in _saved(version))


def test_a_draft_saved_in_another_tab_meanwhile_is_not_overwritten():
    version = _seed()
    at = open_page("rubrics")
    _edit(at, version.id, {0: {"judged_as": "rating"}})
    at.run()
    other_tab = [Criterion(name="refund", requirement="States the refund window in days",
                           weight=10),
                 Criterion(name="order", requirement="Asks for the order number", weight=5)]
    rubrics.save_criteria(db(), version.id, other_tab, actor=ADMIN)
    # This page still reads the old criteria (another server process saved): the service
    # refuses all the same.
    at.button(key="rubrics_save").click().run()
    assert not at.exception
    assert "Nothing was saved: version 1 was changed elsewhere" in texts(at)
    assert rubrics.get_version(db(), version.id).to_criteria() == other_tab
    # A tab of this server clears the readers after its save: the page then says so at once.
    catalog.clear_rubric_readers()
    at.run()
    assert "was saved elsewhere (another tab or person)" in texts(at)
    assert at.button(key="rubrics_save").disabled
    assert rubrics.get_version(db(), version.id).to_criteria() == other_tab
    at.button(key="rubrics_discard").click().run()
    assert "was saved elsewhere" not in texts(at)
