"""The file examples of the docs are read by the code that reads real files: rubric YAML by
the library's loader, response lines by the upload's validator, configuration by its parser."""

from __future__ import annotations

import json
import tomllib

import pytest
import yaml

from grading import Rubric
from storage.response_files import to_responses
from tests.docs.pages import blocks


def test_the_rubric_file_example_loads_with_its_sections():
    (_, _, code), *_ = [b for b in blocks("yaml") if b[0] == "docs/formats/rubrics.md"]
    rubric = Rubric.from_yaml(code)
    assert [(c.name, c.weight, c.section) for c in rubric.rubric] == [
        ("refund_window", 10.0, "Accuracy"), ("wrong_policy", -8.0, "Accuracy"),
        ("empathy", 4.0, "Tone")]


def test_the_criterion_kinds_example_loads_a_rating_and_a_gate():
    [(_, _, code)] = [b for b in blocks("yaml") if b[0] == "docs/formats/rubrics.md"
                      and "scale_type" in b[2]]
    clarity, safe = Rubric.from_yaml(code).rubric
    assert (clarity.scale_type, [(o.label, o.value) for o in clarity.options]) == (
        "ordinal", [("Poor", 0.0), ("Fair", 0.5), ("Good", 1.0)])
    assert (safe.options, safe.required) == (None, True)
    assert Rubric.from_yaml(code).compute_score(["Good", "UNMET"]) == 0.0  # the gate closed


def test_the_response_line_example_maps_its_columns():
    [(_, _, code)] = [b for b in blocks("json") if b[0] == "docs/formats/responses.md"]
    responses, problems = to_responses([json.loads(line) for line in code.splitlines()])
    assert problems == []
    [response] = responses
    assert (response.external_id, response.query, response.output, response.metadata) == (
        "a1", "How much should I take?", "Take 5 mg.", {"model": "small"})


@pytest.mark.parametrize("page,line,code", blocks("toml"), ids=lambda v: str(v)[:30])
def test_a_toml_example_parses(page, line, code):
    assert "auth" in tomllib.loads(code), f"{page}:{line}"


@pytest.mark.parametrize("page,line,code", blocks("yaml"), ids=lambda v: str(v)[:30])
def test_a_yaml_example_parses(page, line, code):
    assert yaml.safe_load(code), f"{page}:{line}"
