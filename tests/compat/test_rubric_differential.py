"""grading against the real ``rubric`` 1.3.2 and 2.2.0: same inputs, same results.

Each version runs in its own cached venv (tests/compat/venvs.py); the judge is scripted and
answers in rubric's own JSON keys (1.3: as text — bare, fenced or amid prose; 2.x: as the
output models). The deliberate differences are in docs/library/drop-in.md and are kept out of
the generated inputs (an all-zero-weight rubric) or compared as documented (a holistic
score outside 0-100: same score, raw_score from the clamped number, a note).
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from tests.compat import cases as gen
from tests.compat.ours import run_case
from tests.compat.venvs import run_driver

DRIVER = Path(__file__).parent / "drivers" / "rubric_driver.py"
SEED = 1402


def _cases_13() -> list[dict]:
    rng = random.Random(SEED)
    return (gen.grade_cases(rng, 90, with_length_penalty=True)
            + gen.text_cases(rng, 40) + gen.file_cases(rng, 30)
            + [{"kind": "load_missing", "id": "missing-file", "path": "/nonexistent/r.yaml"}])


def _cases_22() -> list[dict]:
    return (gen.grade_cases(random.Random(SEED + 1), 60, with_length_penalty=False)
            + gen.file_cases(random.Random(SEED + 2), 20)
            + [{"kind": "load_missing", "id": "missing-file", "path": "/nonexistent/r.yaml"}])


CASES_13 = _cases_13()
CASES_22 = _cases_22()


@pytest.fixture(scope="module")
def theirs_13(rubric13_python):
    out = run_driver(rubric13_python, DRIVER, CASES_13)
    assert out["version"] == "1.3.2"
    return dict(zip([c["id"] for c in CASES_13], out["results"], strict=True))


@pytest.fixture(scope="module")
def theirs_22(rubric22_python):
    out = run_driver(rubric22_python, DRIVER, CASES_22)
    assert out["version"] == "2.2.0"
    return dict(zip([c["id"] for c in CASES_22], out["results"], strict=True))


def _approx(value):
    return None if value is None else pytest.approx(value, abs=1e-9)


def assert_same(case: dict, ours: dict, theirs: dict) -> None:
    if "error" in theirs:
        assert "error" in ours, f"rubric failed ({theirs}) but grading gave {ours}"
        if theirs["error"] == "FileNotFoundError":
            # Ours is a FileNotFoundError that is also a RubricValidationError (a ValueError).
            assert ours["error"] == "RubricFileNotFoundError"
        else:
            assert ours["is_value_error"] == theirs["is_value_error"], (ours, theirs)
        return
    assert "error" not in ours, f"grading failed: {ours['message']} (rubric gave {theirs})"
    if case["kind"] != "grade":
        if case["kind"] == "length_penalty":
            assert ours["penalty"] == _approx(theirs["penalty"])
        elif case["kind"] == "normalize" and isinstance(case["value"], str):
            # Same split; we also warn when the tags leave text out (issue 10.3), rubric not.
            assert ours["result"] == theirs["result"]
        else:
            assert ours == theirs
        return
    assert ours["verdicts"] == theirs["verdicts"]
    assert ours["reasons"] == theirs["reasons"]
    in_range = case["grader"] != "holistic" or 0 <= case["holistic_score"] <= 100
    if in_range or case["normalize"]:
        # Unnormalised, rubric's score is its raw_score from the unclamped number (drop-in.md).
        assert ours["score"] == _approx(theirs["score"])
    if in_range:
        assert ours["raw_score"] == _approx(theirs["raw_score"])
        assert ours["notes"] == []
    else:
        assert ours["notes"] and "outside 0-100" in ours["notes"][0]
    if theirs["llm_raw_score"] is not None:  # rubric 1.3 drops it when a penalty applies
        assert ours["llm_raw_score"] == _approx(theirs["llm_raw_score"])


@pytest.mark.parametrize("case", CASES_13, ids=[c["id"] for c in CASES_13])
def test_same_results_as_rubric_1_3_2(case, theirs_13):
    ours = asyncio.run(run_case(case))
    assert_same(case, ours, theirs_13[case["id"]])


@pytest.mark.parametrize("case", CASES_22, ids=[c["id"] for c in CASES_22])
def test_same_results_as_rubric_2_2_0_with_output_models(case, theirs_22):
    ours = asyncio.run(run_case(case, models=True))
    assert_same(case, ours, theirs_22[case["id"]])


LIST_NAMES = """
import importlib, json
out = {}
for module in ("rubric", "rubric.autograders", "rubric.types", "rubric.utils",
               "rubric.autograders.schemas"):
    try:
        mod = importlib.import_module(module)
    except ImportError:
        continue
    out[module] = sorted(n for n in dir(mod) if not n.startswith("_")
                         and not isinstance(getattr(mod, n), type(json)))
print(json.dumps(out))
"""
# What rubric's modules re-export from third-party libraries, not rubric's own API.
FOREIGN = {"genai", "types", "Any", "Literal", "Protocol", "TypedDict", "BaseModel",
           "ConfigDict", "Field", "Callable", "ABC", "abstractmethod", "Path",
           "ValidationError", "annotations", "logger", "logging"}


@pytest.mark.parametrize("python_fixture", ["rubric13_python", "rubric22_python"])
def test_every_public_name_of_rubrics_modules_exists_in_gradings(python_fixture, request):
    import importlib
    import json
    import subprocess

    python = request.getfixturevalue(python_fixture)
    listing = json.loads(subprocess.run([str(python), "-c", LIST_NAMES], capture_output=True,
                                        text=True, check=True).stdout)
    missing = []
    for module, names in listing.items():
        ours = importlib.import_module(module.replace("rubric", "grading", 1))
        missing += [f"{module}.{n}" for n in names if n not in FOREIGN and not hasattr(ours, n)]
    assert missing == []
