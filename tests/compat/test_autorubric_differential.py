"""grading against the real autorubric 1.6.1: CANNOT_ASSESS scoring strategies (its
``score_reports``), ``Rubric.compute_score`` on rubrics mixing binary and multi-choice
criteria (NA options, every strategy, both weight signs, bad sheets), thinking/output
parsing, input checks, the length penalty and rubric files in every shape both load."""

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


OPTION_SETS = [
    [("Poor", 0.0), ("Fair", 0.5), ("Good", 1.0)],
    [("1", 0.0), ("2", 0.33), ("3", 0.67), ("4", 1.0)],
    [("too few", 0.0), ("just right", 1.0), ("too many", 0.25)],
    [("fail", 0.2), ("partial", 0.2), ("pass", 0.9)],  # a value tie on the worst option
]


def _mixed_criteria(rng: random.Random) -> list[dict]:
    criteria = []
    for index in range(rng.randint(1, 6)):
        item = {"weight": rng.choice([-12, -4, -1.5, 0, 1, 3, 7.5, 10]),
                "requirement": f"c{index}", "name": f"n{index}"}
        if rng.random() < 0.55:
            options = [{"label": label, "value": value}
                       for label, value in rng.choice(OPTION_SETS)]
            if rng.random() < 0.4:
                options.insert(rng.randint(0, len(options)),
                               {"label": "N/A", "value": rng.choice([0.0, 0.5]), "na": True})
            item["options"] = options
            item["scale_type"] = rng.choice(["ordinal", "nominal"])
        criteria.append(item)
    return criteria


def _verdict(rng: random.Random, criterion: dict) -> str:
    if "options" not in criterion:
        return rng.choice(["MET", "UNMET", "CANNOT_ASSESS"])
    label = rng.choice(criterion["options"])["label"]
    return rng.choice([label, label, f"  {label.upper()} "])


def _compute_score_cases(rng: random.Random, count: int) -> list[dict]:
    out = []
    for number in range(count):
        criteria = _mixed_criteria(rng)
        verdicts = [_verdict(rng, c) for c in criteria]
        roll = rng.random()
        if roll < 0.04:
            verdicts = verdicts[:-1]  # one verdict short
        elif roll < 0.08:
            verdicts[rng.randrange(len(verdicts))] = "nope"  # no such option or verdict
        elif roll < 0.1 and any("options" not in c for c in criteria):
            first = next(i for i, c in enumerate(criteria) if "options" not in c)
            verdicts[first] = "Good"  # a label on a binary criterion
        out.append({
            "kind": "compute_score", "id": f"compute-score-{number}", "criteria": criteria,
            "verdicts": verdicts, "strategy": rng.choice(["skip", "zero", "partial", "fail"]),
            "partial_credit": rng.choice([0.0, 0.25, 0.5, 1.0]),
            "normalize": rng.random() < 0.7,
        })
    return out


def _cases() -> list[dict]:
    rng = random.Random(1403)
    text = [c for c in gen.text_cases(rng, 40) if c["kind"] != "parse_json"]
    scores = _score_cases(rng, 200)
    missing = {"kind": "load_missing", "id": "missing-file", "path": "/nonexistent/r.yaml"}
    mixed = _compute_score_cases(random.Random(3401), 400)
    return [*scores, *text, *gen.file_cases(rng, 30), missing, *mixed]


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
        if case["kind"] == "compute_score":
            criteria = [Criterion(**c) for c in case["criteria"]]
            return {"score": Rubric(criteria).compute_score(
                case["verdicts"], normalize=case["normalize"],
                cannot_assess_strategy=case["strategy"],
                partial_credit=case["partial_credit"])}
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


def _only_zero_weights_left(case: dict) -> bool:
    if case["kind"] == "score":
        pairs = [(w, v == "CANNOT_ASSESS") for w, v in zip(case["weights"], case["verdicts"],
                                                           strict=True)]
    else:
        pairs = []
        for item, verdict in zip(case["criteria"], case["verdicts"], strict=True):
            criterion = Criterion(**item)
            abstained = (verdict == "CANNOT_ASSESS" if criterion.options is None else
                         criterion.options[criterion.find_option_by_label(verdict)].na)
            pairs.append((criterion.weight, abstained))
    return all(w == 0 for w, abstained in pairs
               if not (abstained and case["strategy"] == "skip"))


def test_the_generated_sheets_cover_every_kind_of_input():
    mixed = [c for c in CASES if c["kind"] == "compute_score"]
    options = [o for c in mixed for item in c["criteria"] for o in item.get("options", [])]
    assert any(o.get("na") for o in options)
    assert {c["strategy"] for c in mixed} == {"skip", "zero", "partial", "fail"}
    assert any(item["weight"] < 0 and "options" in item for c in mixed for item in c["criteria"])
    assert any("nope" in c["verdicts"] for c in mixed)


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
    if case["kind"] in ("score", "compute_score") and mine["score"] is None and (
            reference["score"] is not None):
        # Deliberate: when only weight-0 criteria are left, autorubric says 0.0; we say None.
        assert reference["score"] == 0.0 and _only_zero_weights_left(case)
        return
    if case["kind"] in ("score", "compute_score", "length_penalty"):
        key = "penalty" if case["kind"] == "length_penalty" else "score"
        expected = reference[key]
        assert mine[key] == (None if expected is None else pytest.approx(expected, abs=1e-9))
    else:
        assert mine == reference
