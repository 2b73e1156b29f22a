"""Multi-choice and required criteria are stored with their rubric versions: saving and
loading gives back the same rubric, a file mixing kinds round-trips through the service, and
the version diff names option changes."""

from __future__ import annotations

import pytest

from grading.errors import RubricValidationError
from grading.options import CriterionOption as O
from grading.rubric import Rubric
from grading.types import Criterion
from storage.errors import InvalidInputError
from storage.services import rubrics
from storage.services.rubric_diff import diff_criteria, diff_versions
from tests.actors import ADMIN

LIKERT = tuple(O(label=label, value=v) for label, v in
               [("Poor", 0.0), ("Fair", 0.25), ("Good", 0.5), ("Very good", 0.75),
                ("Excellent", 1.0)])
MIXED = [
    Criterion(name="correct", requirement="Gives the right dose", weight=10, required=True),
    Criterion(name="clarity", requirement="How clear is it?", weight=5, options=LIKERT),
    Criterion(name="tone", requirement="Which tone?", weight=2, scale_type="nominal",
              options=(O(label="formal", value=1.0), O(label="casual", value=0.5),
                       O(label="rude", value=0.0), O(label="no text", value=0.0, na=True))),
    Criterion(name="harm", requirement="Recommends a harmful action", weight=-8,
              required=True, section="Safety"),
]

MIXED_YAML = """\
- name: correct
  requirement: Gives the right dose
  weight: 10
  required: true
- name: clarity
  requirement: How clear is it?
  weight: 5
  scale_type: ordinal
  options:
    - {label: Poor, value: 0.0}
    - {label: Fair, value: 0.5}
    - {label: Good, value: 1.0}
- name: tone
  requirement: Which tone?
  weight: 2
  scale_type: nominal
  options:
    - {label: formal, value: 1.0}
    - {label: casual, value: 0.5}
    - {label: off topic, value: 0.0, na: true}
"""


def test_multi_choice_and_required_criteria_round_trip(sessions):
    created = rubrics.create_rubric(sessions, "Mixed", MIXED, actor=ADMIN)
    loaded = rubrics.get_version(sessions, created.id)
    assert loaded.to_criteria() == MIXED
    assert Rubric(loaded.to_criteria()) == Rubric(MIXED)
    kinds = [(c.scale_type, c.required, c.options is None) for c in loaded.criteria]
    assert kinds == [(None, True, True), ("ordinal", False, False),
                     ("nominal", False, False), (None, True, True)]
    # a new version (the first is frozen) keeps them too
    rubrics.freeze_version(sessions, created.id, actor=ADMIN)
    second = rubrics.save_criteria(sessions, created.id, MIXED[1:], actor=ADMIN)
    assert second.id != created.id
    assert rubrics.get_version(sessions, second.id).to_criteria() == MIXED[1:]


def test_a_file_mixing_kinds_imports_and_exports_exactly(sessions):
    version = rubrics.import_rubric(sessions, "From file", MIXED_YAML, filename="r.yaml",
                                    actor=ADMIN)
    original = Rubric.from_yaml(MIXED_YAML)
    assert Rubric(version.to_criteria()) == original
    assert rubrics.get_version(sessions, version.id).to_criteria() == original.criteria
    for fmt in ("yaml", "json"):
        exported = rubrics.export_version(sessions, version.id, fmt)
        assert Rubric.from_text(exported, filename=f"r.{fmt}") == original
        again = rubrics.import_rubric(sessions, f"again {fmt}", exported, filename=f"r.{fmt}",
                                      actor=ADMIN)
        assert again.to_criteria() == original.criteria


def test_a_verifiers_rubric_file_with_choices_imports(sessions):
    text = ('{"criteria": [{"name": "steps", "text": "Shows the steps", "weight": 2, '
            '"choices": ["none", "some", "all"]}, {"name": "final", "text": "Right answer"}]}')
    version = rubrics.import_rubric(sessions, "verifiers", text, filename="v.json", actor=ADMIN)
    steps, final = rubrics.get_version(sessions, version.id).to_criteria()
    assert [(o.label, o.value) for o in steps.options] == [
        ("none", 0.0), ("some", 0.5), ("all", 1.0)]
    assert final.options is None and final.weight == 1.0


@pytest.mark.parametrize("text, named", [
    pytest.param("- name: clarity\n  requirement: r\n  options:\n"
                 "    - {label: a, value: 1.5}\n    - {label: b, value: 0}\n", "clarity",
                 id="value-outside-0-1"),
    pytest.param("- name: tone\n  requirement: r\n  options:\n"
                 "    - {label: a, value: 1}\n    - {label: A, value: 0}\n", "tone",
                 id="duplicate-label"),
    pytest.param("- name: scale\n  requirement: r\n  options:\n"
                 "    - {label: only, value: 1}\n", "scale", id="one-option"),
    pytest.param("- name: gate\n  requirement: r\n  weight: 0\n  required: true\n", "gate",
                 id="required-with-weight-0"),
])
def test_bad_options_are_refused_naming_the_criterion_and_nothing_is_written(
        sessions, text, named):
    with pytest.raises(RubricValidationError) as caught:
        rubrics.import_rubric(sessions, "Bad", text, filename="bad.yaml", actor=ADMIN)
    assert named in str(caught.value) and "bad.yaml" in str(caught.value)
    assert rubrics.list_rubrics(sessions) == []


def test_the_diff_names_option_changes():
    old = MIXED
    clarity = MIXED[1].model_copy(update={"options": (
        O(label="Poor", value=0.0), O(label="Fair", value=0.4), O(label="Great", value=1.0),
        O(label="Good", value=0.5))})
    tone = MIXED[2].model_copy(update={"scale_type": "ordinal"})
    correct = MIXED[0].model_copy(update={"required": False})
    harm = MIXED[3].model_copy(update={"options": LIKERT})
    changes = {c.label: c for c in diff_criteria(old, [correct, clarity, tone, harm])}
    assert changes["correct"].details == ("no longer required",)
    assert changes["clarity"].details == (
        "option 'Fair' value 0.25 → 0.4", "option 'Great' (1) added",
        "option 'Good' moved from 3 to 4", "option 'Very good' (0.75) removed",
        "option 'Excellent' (1) removed")
    assert changes["tone"].details == ("nominal options → ordinal options",)
    assert changes["harm"].details == ("MET/UNMET → ordinal options",)


def test_diff_versions_reads_stored_options(sessions):
    first = rubrics.create_rubric(sessions, "r", MIXED, actor=ADMIN)
    rubrics.freeze_version(sessions, first.id, actor=ADMIN)
    relabelled = MIXED[1].model_copy(
        update={"options": (O(label="poor", value=0.0), *LIKERT[1:])})
    second = rubrics.save_criteria(sessions, first.id, [MIXED[0], relabelled, *MIXED[2:]],
                                   actor=ADMIN)
    diff = diff_versions(sessions, first.id, second.id)
    [changed] = [c for c in diff.changes if c.kind == "changed"]
    assert (changed.label, changed.details) == ("clarity",
                                                ("option 'Poor' relabelled 'poor'",))


def test_an_option_label_too_long_to_store_is_refused_naming_it(sessions):
    long_label = MIXED[1].model_copy(update={"options": (
        O(label="x" * 300, value=0.0), O(label="fine", value=1.0))})
    with pytest.raises(InvalidInputError, match=r"criterion 2 \('clarity'\): option 1's label"):
        rubrics.create_rubric(sessions, "Long", [MIXED[0], long_label], actor=ADMIN)
    assert rubrics.list_rubrics(sessions) == []
