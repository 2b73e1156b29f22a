"""grading against the real autorubric 1.6.1: CANNOT_ASSESS scoring strategies (its
``score_reports``), thinking/output parsing, input checks, the length penalty and rubric
files in every shape both load."""

from __future__ import annotations

import os
import random
import tempfile
import warnings
from pathlib import Path

import pytest

from grading import Criterion, Rubric
from grading.aggregation import aggregate_verdicts
from grading.length_penalty import compute_length_penalty
from grading.text import normalize_to_grade_input, parse_thinking_output
from grading.types import LengthPenalty
from tests.compat import cases as gen
from tests.compat.venvs import run_driver

DRIVER = Path(__file__).parent / "drivers" / "autorubric_driver.py"


def _score_cases(rng: random.Random, count: int) -> list[dict]:
    out = []
    for number in range(count):
        size = rng.randint(1, 7)
        out.append({
            "kind": "score", "id": f"score-{number}",
            "weights": [rng.choice([-12, -4, -1.5, 0, 1, 3, 7.5, 10]) for _ in range(size)],
            "verdicts": [rng.choice(["MET", "UNMET", "CANNOT_ASSESS"]) for _ in range(size)],
            "strategy": rng.choice(["skip", "zero", "partial", "fail"]),
            "partial_credit": rng.choice([0.0, 0.25, 0.5, 1.0]),
            "normalize": rng.random() < 0.7,
        })
    return out


def _cases() -> list[dict]:
    rng = random.Random(1403)
    text = [c for c in gen.text_cases(rng, 40) if c["kind"] != "parse_json"]
    scores = _score_cases(rng, 200)
    missing = {"kind": "load_missing", "id": "missing-file", "path": "/nonexistent/r.yaml"}
    return [*scores, *text, *gen.file_cases(rng, 30), missing]


CASES = _cases()


@pytest.fixture(scope="module")
def theirs(autorubric_python):
    results = run_driver(autorubric_python, DRIVER, CASES)
    return dict(zip([c["id"] for c in CASES], results, strict=True))


def ours(case: dict) -> dict:
    try:
        if case["kind"] == "score":
            criteria = [Criterion(weight=w, requirement=f"c{i}")
                        for i, w in enumerate(case["weights"])]
            return {"score": aggregate_verdicts(
                criteria, case["verdicts"], normalize=case["normalize"],
                cannot_assess=case["strategy"], partial_credit=case["partial_credit"]).score}
        if case["kind"] == "parse_thinking":
            return dict(parse_thinking_output(case["text"]))
        if case["kind"] == "normalize":
            return {"result": dict(normalize_to_grade_input(case["value"]))}
        if case["kind"] == "load":
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "rubric" + case["ext"])
                with open(path, "w") as handle:
                    handle.write(case["content"])
                with warnings.catch_warnings():  # unused fields: a warning here, none there
                    warnings.simplefilter("ignore")
                    loaded = Rubric.from_file(path)
            return {"criteria": [[c.weight, c.requirement] for c in loaded.rubric]}
        if case["kind"] == "load_missing":
            Rubric.from_file(case["path"])
            return {"loaded": True}
        return {"penalty": compute_length_penalty(case["value"], LengthPenalty(**case["config"]))}
    except Exception as exc:
        return {"error": type(exc).__name__, "is_value_error": isinstance(exc, ValueError),
                "is_file_not_found": isinstance(exc, FileNotFoundError)}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_same_results_as_autorubric_1_6_1(case, theirs):
    mine, reference = ours(case), theirs[case["id"]]
    if "error" in reference:
        assert "error" in mine
        if reference["is_file_not_found"]:
            # Ours is a FileNotFoundError that is also a RubricValidationError (drop-in.md).
            assert mine["is_file_not_found"]
        else:
            assert mine["is_value_error"] == reference["is_value_error"]
        return
    assert "error" not in mine, mine
    if case["kind"] == "score" and mine["score"] is None and reference["score"] is not None:
        # Deliberate: when only weight-0 criteria are left, autorubric says 0.0; we say None.
        left = [w for w, v in zip(case["weights"], case["verdicts"], strict=True)
                if not (v == "CANNOT_ASSESS" and case["strategy"] == "skip")]
        assert all(w == 0 for w in left) and reference["score"] == 0.0
        return
    if case["kind"] in ("score", "length_penalty"):
        key = "score" if case["kind"] == "score" else "penalty"
        expected = reference[key]
        assert mine[key] == (None if expected is None else pytest.approx(expected, abs=1e-9))
    else:
        assert mine == reference
