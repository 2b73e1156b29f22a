"""verifiers 0.4 rubric files read by grading as the real verifiers reads them: the same
criteria, weights, and the value of every choice (worst to best, 0 to 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grading import Rubric
from tests.compat.venvs import run_driver

DRIVER = Path(__file__).parent / "drivers" / "verifiers_rubric_driver.py"
FILES = [
    {"criteria": [{"name": "a", "text": "Correct"}]},
    {"criteria": [{"name": "a", "text": "Correct", "weight": 3},
                  {"name": "b", "text": "Readable", "choices": ["bad", "ok", "good", "great"]},
                  {"name": "c", "text": "Cites", "choices": ["no", "yes"], "weight": 0.25}]},
    {"criteria": [{"name": "likert", "text": "Helpful?", "choices": ["1", "2", "3", "4", "5"]},
                  {"name": "flip", "text": "Says yes", "choices": ["yes", "no"]}]},
]


@pytest.fixture(scope="module")
def theirs(verifiers_python):
    return run_driver(verifiers_python, DRIVER, FILES)


@pytest.mark.parametrize("index", range(len(FILES)))
def test_same_criteria_weights_and_choice_values_as_verifiers(index, theirs):
    ours = Rubric.from_dict(FILES[index])
    reference = theirs[index]["criteria"]
    assert [c.name for c in ours] == [c["name"] for c in reference]
    assert [c.requirement for c in ours] == [c["text"] for c in reference]
    assert [c.weight for c in ours] == [c["weight"] for c in reference]
    for criterion, theirs_criterion in zip(ours, reference, strict=True):
        if criterion.options is None:  # ["no", "yes"]: MET is "yes"
            assert theirs_criterion["values"] == {"no": 0.0, "yes": 1.0}
        else:
            assert {o.label: o.value for o in criterion.options} == pytest.approx(
                theirs_criterion["values"])
