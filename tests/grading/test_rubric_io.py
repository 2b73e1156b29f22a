"""Loading and writing rubrics: every accepted shape, round trips, and every error message."""

from __future__ import annotations

import io
import json

import pytest

from grading import Criterion, CriterionOption, Rubric, RubricValidationError
from grading.rubric_io import IgnoredFieldsWarning

FLAT = [
    {"weight": 10.0, "requirement": "States the margin"},
    {"name": "shapley", "weight": 8, "requirement": "Uses Shapley attribution"},
    {"weight": -15.0, "requirement": "Uses total deliveries"},
]
SECTIONED = {
    "sections": [
        {"name": "Accuracy", "criteria": [{"name": "a", "weight": 5, "requirement": "Correct"}]},
        {"name": "Style", "criteria": [{"requirement": "Concise"}, {"requirement": "Polite"}]},
    ]
}


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(FLAT, id="flat-list"),
        pytest.param({"criteria": FLAT}, id="criteria-key"),
        pytest.param({"rubric": FLAT}, id="rubric-wrapping-list"),
        pytest.param({"rubric": {"criteria": FLAT}}, id="rubric-wrapping-criteria"),
    ],
)
def test_flat_shapes_load_the_same_criteria(data):
    rubric = Rubric.from_dict(data)
    assert [c.weight for c in rubric] == [10.0, 8.0, -15.0]
    assert rubric.criteria[1].name == "shapley"
    assert rubric.criteria[0].name is None


@pytest.mark.parametrize("data", [SECTIONED, {"rubric": SECTIONED}], ids=["sections", "wrapped"])
def test_sections_are_kept(data):
    rubric = Rubric.from_dict(data)
    assert [c.section for c in rubric] == ["Accuracy", "Style", "Style"]
    assert rubric.criteria[1].weight == 10.0  # the default weight


def test_string_items_are_requirements_with_default_weight():
    rubric = Rubric.from_yaml("- Mentions the deadline\n- weight: -5\n  requirement: Is rude\n")
    assert rubric.criteria[0] == Criterion(requirement="Mentions the deadline", weight=10.0)


@pytest.mark.parametrize(
    "criteria",
    [
        pytest.param([Criterion(weight=1.5, requirement="a"), Criterion(requirement="b: c")],
                     id="flat"),
        pytest.param([Criterion(requirement="a", section="S1", name="n1"),
                      Criterion(requirement="b", section="S2"),
                      Criterion(requirement="c", section="S1", weight=-2)], id="interleaved"),
        pytest.param([Criterion(requirement="a", section="S1"), Criterion(requirement="b")],
                     id="mixed-sections"),
        pytest.param([Criterion(requirement="ünïcode — “quotes”\nsecond line", weight=0)],
                     id="unicode-multiline"),
    ],
)
def test_round_trips_exactly(criteria):
    rubric = Rubric(criteria)
    assert Rubric.from_dict(rubric.to_dict()) == rubric
    assert Rubric.from_json(rubric.to_json()) == rubric
    assert Rubric.from_yaml(rubric.to_yaml()) == rubric


def test_flat_rubric_writes_the_rubric_package_format():
    rubric = Rubric.from_dict(FLAT)
    assert rubric.to_dict()[0] == {"weight": 10.0, "requirement": "States the margin"}


def test_sectioned_rubric_writes_sections():
    assert Rubric.from_dict(SECTIONED).to_dict() == {
        "sections": [
            {"name": "Accuracy", "criteria": [{"name": "a", "weight": 5.0,
                                               "requirement": "Correct"}]},
            {"name": "Style", "criteria": [{"weight": 10.0, "requirement": "Concise"},
                                           {"weight": 10.0, "requirement": "Polite"}]},
        ]
    }


def test_from_file_detects_format_by_extension_and_content(tmp_path):
    rubric = Rubric.from_dict(SECTIONED)
    (tmp_path / "r.yaml").write_text(rubric.to_yaml())
    (tmp_path / "r.json").write_text(rubric.to_json())
    (tmp_path / "noext").write_text(rubric.to_json())
    assert Rubric.from_file(tmp_path / "r.yaml") == rubric
    assert Rubric.from_file(str(tmp_path / "r.json")) == rubric
    assert Rubric.from_file(tmp_path / "noext") == rubric
    assert Rubric.from_file(io.StringIO(rubric.to_yaml())) == rubric
    assert Rubric.from_file(io.BytesIO(rubric.to_json().encode())) == rubric


def test_yaml_flow_list_is_not_mistaken_for_json():
    assert len(Rubric.from_file(io.StringIO("[{requirement: a}, {requirement: b}]"))) == 2


def error_of(loader, *args) -> RubricValidationError:
    with pytest.raises(RubricValidationError) as info:
        loader(*args)
    return info.value


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        pytest.param("- requirement: a\n- requirement: b\n- name: clarity\n  weight: high\n"
                     "  requirement: c\n",
                     "criterion 3 ('clarity') at line 3: weight must be a number, got 'high'",
                     id="weight-not-number"),
        pytest.param("- weight: 3\n", "criterion 1 at line 1: requirement is missing",
                     id="missing-requirement"),
        pytest.param("- requirement: '  '\n", "requirement must not be empty",
                     id="blank-requirement"),
        pytest.param("- requirement: [1, 2]\n", "requirement must be text, got list",
                     id="requirement-not-text"),
        pytest.param("- requirement: a\n  weight: .nan\n", "weight must be a finite number",
                     id="nan-weight"),
        pytest.param("- requirement: a\n  weight: true\n", "weight must be a number, got True",
                     id="bool-weight"),
        pytest.param("- name: x\n  requirement: a\n- name: x\n  requirement: b\n",
                     "criterion 2 ('x') at line 3: name 'x' is already used by criterion 1",
                     id="duplicate-name"),
        pytest.param("- 42\n", "criterion 1: must be a mapping", id="item-not-mapping"),
        pytest.param("[]\n", "the rubric has no criteria", id="empty"),
        pytest.param("just text\n", "a rubric must be a list of criteria", id="scalar"),
        pytest.param("title: x\n", "needs a 'criteria' list or a 'sections' list",
                     id="unknown-mapping"),
        pytest.param("criteria: {a: 1}\n", "'criteria' must be a list", id="criteria-not-list"),
        pytest.param("criteria: []\nsections: []\n", "either 'criteria' or 'sections'",
                     id="both-keys"),
        pytest.param("sections:\n- criteria: []\n", "the rubric has no criteria",
                     id="only-an-empty-section"),
        pytest.param("sections:\n- title: T\n  criteria: 3\n",
                     "section 1 ('T'): 'criteria' must be a list", id="section-criteria-not-list"),
        pytest.param("sections:\n- name: S\n  criteria:\n  - requirement: a\n    section: T\n",
                     "section 'T' contradicts the enclosing section 'S'",
                     id="section-contradiction"),
        pytest.param("- requirement: a\n  weight: [1\n",
                     "invalid YAML at line 3, column 1", id="yaml-syntax"),
    ],
)
def test_yaml_errors_name_the_place_and_field(yaml_text, message):
    assert message in str(error_of(Rubric.from_yaml, yaml_text))


def test_every_problem_is_reported_not_just_the_first():
    err = error_of(Rubric.from_dict, [{"weight": "x"}, {"requirement": "ok"}, {"weight": None}])
    assert err.problems == [
        "criterion 1: requirement is missing",
        "criterion 1: weight must be a number, got 'x'",
        "criterion 3: requirement is missing",
        "criterion 3: weight must be a number, got nothing (null)",
    ]
    assert str(err).startswith("4 problems in the rubric:\n  - criterion 1")


def test_json_errors_report_the_line():
    err = error_of(Rubric.from_json, '[\n  {"requirement": "a",}\n]')
    assert str(err).startswith("invalid JSON at line 2")


def test_json_criterion_errors_have_no_line_but_name_the_criterion():
    err = error_of(Rubric.from_json, json.dumps([{"name": "tone", "requirement": ""}]))
    assert str(err) == "criterion 1 ('tone'): requirement must not be empty"


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("- weight: 1\n")
    assert str(error_of(Rubric.from_file, path)).startswith(f"{path}: criterion 1 at line 1")
    missing = tmp_path / "missing.yaml"
    assert "cannot read the rubric file" in str(error_of(Rubric.from_file, missing))
    binary = tmp_path / "latin1.yaml"
    binary.write_bytes("- requirement: caf\xe9\n".encode("latin-1"))
    assert "not UTF-8" in str(error_of(Rubric.from_file, binary))


def test_messages_contain_no_pydantic_dump():
    err = error_of(Rubric.from_dict, [{"requirement": 5, "weight": "a"}])
    assert "validation error" not in str(err).lower()
    assert "pydantic" not in str(err).lower()


def test_direct_construction_checks_names_and_emptiness():
    assert "no criteria" in str(error_of(Rubric, []))
    err = error_of(Rubric, [Criterion(name="a", requirement="x"), Criterion(name="a",
                                                                             requirement="y")])
    assert "criterion 2 ('a'): name is already used by criterion 1" in str(err)


def test_rubric_validation_error_is_a_value_error():
    assert issubclass(RubricValidationError, ValueError)


def test_unknown_fields_are_ignored_with_a_warning_that_names_them_and_where():
    with pytest.warns(IgnoredFieldsWarning) as caught:
        rubric = Rubric.from_yaml("- requirement: a\n  points: 3\n  tags: [x]\n")
    assert rubric.rubric == [Criterion(requirement="a")]
    message = str(caught[0].message)
    assert "criterion 1 at line 1: 'points', 'tags'" in message


RUBRIC_PACKAGE_SHAPES = {
    "rubric-with-id-and-sections": {"rubric": {"id": "r1", "sections": [
        {"id": "s1", "title": "Accuracy", "criteria": [
            {"id": "c1", "weight": 5, "requirement": "a"},
            {"id": "c2", "weight": -2, "requirement": "b"}]},
        {"id": "s2", "criteria": [{"id": "c3", "weight": 1, "requirement": "c"}]}]}},
    "bare-list-of-sections": [
        {"title": "Accuracy", "criteria": [{"weight": 5, "requirement": "a"},
                                           {"weight": -2, "requirement": "b"}]},
        {"name": "s2", "criteria": [{"weight": 1, "requirement": "c"}]}],
    "sections-and-criteria-mixed-in-a-list": [
        {"title": "Accuracy", "criteria": [{"weight": 5, "requirement": "a"},
                                           {"weight": -2, "requirement": "b"}]},
        {"weight": 1, "requirement": "c"}],
}


@pytest.mark.parametrize("data", RUBRIC_PACKAGE_SHAPES.values(), ids=RUBRIC_PACKAGE_SHAPES)
@pytest.mark.filterwarnings("ignore::grading.rubric_io.IgnoredFieldsWarning")
def test_every_shape_the_rubric_package_loads_loads_here(data, tmp_path):
    for rubric in (Rubric.from_dict(data), Rubric.from_json(json.dumps(data))):
        assert [(c.weight, c.requirement) for c in rubric] == [(5, "a"), (-2, "b"), (1, "c")]
        assert rubric.rubric[0].section == "Accuracy"


def test_a_numeric_string_weight_is_read_as_a_number_as_rubric_does():
    assert Rubric.from_dict([{"requirement": "a", "weight": " -2.5 "}]).rubric[0].weight == -2.5


def test_a_missing_file_raises_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        Rubric.from_file(str(tmp_path / "nope.yaml"))
    assert isinstance(caught.value, RubricValidationError)
    assert "nope.yaml" in str(caught.value)


# -- multi-choice and required criteria (issue 34) -----------------------------------------

MIXED_CRITERIA = [
    Criterion(name="clarity", requirement="How clear?", required=True, options=[
        CriterionOption(label="poor", value=0.0), CriterionOption(label="ok", value=0.25),
        CriterionOption(label="good", value=1.0),
        CriterionOption(label="N/A", value=0.0, na=True)]),
    Criterion(requirement="Tone", weight=-4, scale_type="nominal", section="Style", options=[
        CriterionOption(label="rude", value=1.0), CriterionOption(label="fine", value=0.0)]),
    Criterion(requirement="Plain one", weight=2.5, section="Style"),
]


def test_a_rubric_mixing_kinds_round_trips_exactly():
    rubric = Rubric(MIXED_CRITERIA)
    assert Rubric.from_dict(rubric.to_dict()) == rubric
    assert Rubric.from_json(rubric.to_json()) == rubric
    assert Rubric.from_yaml(rubric.to_yaml()) == rubric


def test_autorubric_options_load_from_yaml():
    rubric = Rubric.from_yaml(
        "- name: sat\n  requirement: How satisfied?\n  scale_type: ordinal\n  options:\n"
        "    - {label: '1', value: 0.0}\n    - {label: '2', value: 0.5}\n"
        "    - {label: '3', value: 1.0}\n    - {label: N/A, value: 0.0, na: true}\n")
    criterion = rubric.criteria[0]
    assert [o.label for o in criterion.options] == ["1", "2", "3", "N/A"]
    assert criterion.na_option_index == 3 and criterion.scale_type == "ordinal"


def test_verifiers_choices_are_worst_to_best_spread_from_0_to_1():
    rubric = Rubric.from_dict([{"requirement": "Quality", "choices": ["bad", "fair", "great"]}])
    assert [(o.label, o.value) for o in rubric.criteria[0].options] == [
        ("bad", 0.0), ("fair", 0.5), ("great", 1.0)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("- name: a\n  requirement: x\n  options: [{label: p, value: 1.5}, "
                     "{label: q, value: 0}]\n",
                     "criterion 1 ('a') at line 1: option 1 ('p'): value must be between 0 "
                     "and 1, got 1.5", id="value-out-of-range"),
        pytest.param("- name: a\n  requirement: x\n  options: [{label: p, value: 1}, "
                     "{label: ' P', value: 0}]\n",
                     "criterion 1 ('a') at line 1: option label ' P' is used twice",
                     id="duplicate-labels"),
        pytest.param("- name: a\n  requirement: x\n  options: [{label: p, value: 1}]\n",
                     "criterion 1 ('a') at line 1: an ordinal criterion needs at least two "
                     "options that are not NA, got 1", id="ordinal-one-option"),
        pytest.param("- requirement: x\n  weight: 0\n  required: true\n",
                     "criterion 1 at line 1: a required criterion needs a weight other than 0",
                     id="required-weight-0"),
        pytest.param("- requirement: x\n  scale_type: interval\n  options: [{label: p, value: 1},"
                     " {label: q, value: 0}]\n",
                     "scale_type must be 'ordinal' or 'nominal'", id="unknown-scale"),
        pytest.param("- requirement: x\n  options: [{label: p, value: 1}, {label: q}]\n",
                     "option 2 ('q'): value must be a number from 0 to 1", id="missing-value"),
        pytest.param("- requirement: x\n  choices: [only]\n",
                     "choices must be a list of at least two labels", id="one-choice"),
        pytest.param("- requirement: x\n  required: yes please\n",
                     "required must be true or false", id="required-not-boolean"),
    ],
)
def test_bad_options_are_named_by_criterion_and_line(text, message):
    with pytest.raises(RubricValidationError) as caught:
        Rubric.from_yaml(text, source="r.yaml")
    assert message in str(caught.value) and str(caught.value).startswith("r.yaml: ")


def test_a_verdict_sheet_with_an_unknown_label_names_the_criterion():
    with pytest.raises(ValueError, match=r"criterion 1 \('clarity'\): label 'great' not found"):
        Rubric(MIXED_CRITERIA).compute_score(["great", "rude", "MET"])


VERIFIERS_FILE = {"criteria": [
    {"name": "correct", "text": "The answer is correct", "weight": 2.0},
    {"name": "style", "text": "How readable is it?", "choices": ["poor", "fair", "good"]},
    {"name": "cites", "text": "Cites a source", "choices": ["no", "yes"], "weight": 0.5},
]}


def test_a_verifiers_rubric_file_loads_with_its_own_defaults():
    rubric = Rubric.from_json(json.dumps(VERIFIERS_FILE))
    correct, style, cites = rubric.criteria
    assert (correct.requirement, correct.weight, correct.options) == (
        "The answer is correct", 2.0, None)
    assert style.weight == 1.0  # verifiers' default weight, not ours (10)
    assert [(o.label, o.value) for o in style.options] == [
        ("poor", 0.0), ("fair", 0.5), ("good", 1.0)]
    assert cites.options is None  # ["no", "yes"] is verifiers' binary check


def test_a_verifiers_rubric_file_round_trips_exactly():
    rubric = Rubric.from_dict(VERIFIERS_FILE)
    written = rubric.to_verifiers()
    assert written == {"criteria": [
        {"name": "correct", "text": "The answer is correct", "weight": 2.0},
        {"name": "style", "text": "How readable is it?", "weight": 1.0,
         "choices": ["poor", "fair", "good"]},
        {"name": "cites", "text": "Cites a source", "weight": 0.5}]}
    assert Rubric.from_dict(written) == rubric


def test_what_verifiers_cannot_express_is_refused_by_name():
    rubric = Rubric([Criterion(name="rude", requirement="Is rude", weight=-3),
                     Criterion(name="odd", requirement="Odd scale", options=[
                         CriterionOption(label="a", value=0.0),
                         CriterionOption(label="b", value=0.9),
                         CriterionOption(label="c", value=1.0)])])
    with pytest.raises(RubricValidationError) as caught:
        rubric.to_verifiers()
    assert "criterion 1 ('rude'): verifiers rubrics have no negative weights" in str(caught.value)
    assert "criterion 2 ('odd'): verifiers choices are valued 0 to 1 evenly" in str(caught.value)


@pytest.mark.parametrize(("text", "name"), [
    pytest.param("name: Dosing\ncriteria: [{requirement: x, weight: 1}]\n", "Dosing", id="name"),
    pytest.param("title: '  Tone   check '\ncriteria: [{requirement: x, weight: 1}]\n",
                 "Tone check", id="title"),
    pytest.param("rubric:\n  name: Inner\n  criteria: [{requirement: x, weight: 1}]\n",
                 "Inner", id="under-rubric"),
    pytest.param("- {requirement: x, weight: 1}\n", None, id="a-plain-list"),
    pytest.param("name: 3\ncriteria: [{requirement: x, weight: 1}]\n", None, id="not-text"),
])
def test_a_files_own_name_is_read(text, name):
    assert Rubric.from_text(text).declared_name == name
