"""The differential cases run through ``grading`` (the same shapes as drivers/*.py)."""

from __future__ import annotations

import json
import os
import re
import tempfile
import warnings
from typing import Any

from grading import LengthPenalty, Rubric
from grading.autograders import (
    PerCriterionGrader,
    PerCriterionOneShotGrader,
    RubricAsJudgeGrader,
)
from grading.autograders.schemas import (
    CriterionEvaluation,
    OneShotOutput,
    PerCriterionOutput,
    RubricAsJudgeOutput,
)
from grading.utils import (
    compute_length_penalty,
    normalize_to_grade_input,
    parse_json_to_dict,
    parse_thinking_output,
)

TOKEN = re.compile(r"REQ\d{3}")
GRADERS = {
    "per_criterion": PerCriterionGrader,
    "one_shot": PerCriterionOneShotGrader,
    "holistic": RubricAsJudgeGrader,
}


def _wrap(payload: dict[str, Any], how: str) -> str:
    text = json.dumps(payload)
    if how == "fence":
        return f"```json\n{text}\n```"
    if how == "prose":
        return f"Here is my evaluation.\n{text}\nLet me know if you need more."
    return text


def scripted(case: dict[str, Any], *, models: bool):
    """The judge of the case, answering in rubric's JSON dialect (text, or 2.x models)."""
    verdicts = case["verdicts"]

    async def generate(system_prompt: str, user_prompt: str) -> Any:
        tokens = TOKEN.findall(user_prompt)
        if case["grader"] == "per_criterion":
            payload = {"criterion_status": verdicts[tokens[0]], "explanation": "e " + tokens[0]}
            model: Any = PerCriterionOutput
        elif case["grader"] == "one_shot":
            payload = {"criteria_evaluations": [
                {"criterion_number": i, "criterion_status": verdicts[t], "explanation": "e " + t}
                for i, t in enumerate(tokens, start=1)]}
            if models:
                return OneShotOutput(criteria_evaluations=[
                    CriterionEvaluation(**e) for e in payload["criteria_evaluations"]])
        else:
            payload = {"overall_score": case["holistic_score"], "explanation": "overall"}
            model = RubricAsJudgeOutput
        if models:
            return model(**payload)
        return _wrap(payload, case.get("wrap", "bare"))

    return generate


def _error(exc: Exception) -> dict[str, Any]:
    return {"error": type(exc).__name__, "is_value_error": isinstance(exc, ValueError),
            "message": str(exc)}


async def run_case(case: dict[str, Any], *, models: bool = False) -> dict[str, Any]:
    kind = case["kind"]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if kind == "grade":
                options: dict[str, Any] = {"normalize": case["normalize"], "max_retries": 0}
                if case.get("length_penalty") and not models:
                    options["length_penalty"] = LengthPenalty(**case["length_penalty"])
                grader = GRADERS[case["grader"]](scripted(case, models=models), **options)
                report = await Rubric.from_dict(case["rubric"]).grade(
                    case["to_grade"], autograder=grader, query=case.get("query"))
                return {
                    "score": report.score,
                    "raw_score": report.raw_score,
                    "llm_raw_score": report.llm_raw_score,
                    "verdicts": None if report.report is None
                    else [r.verdict.value for r in report.report],
                    "reasons": None if report.report is None else [r.reason for r in report.report],
                    "notes": list(report.notes),
                }
            if kind == "parse_thinking":
                return dict(parse_thinking_output(case["text"]))
            if kind == "normalize":
                result = normalize_to_grade_input(case["value"])
                return {"result": dict(result),
                        "warned": any(issubclass(w.category, UserWarning) for w in caught)}
            if kind == "length_penalty":
                config = LengthPenalty(**case["config"])
                return {"penalty": compute_length_penalty(case["value"], config)}
            if kind == "parse_json":
                return {"result": parse_json_to_dict(case["text"])}
            if kind == "load":
                with tempfile.TemporaryDirectory() as folder:
                    path = os.path.join(folder, "rubric" + case["ext"])
                    with open(path, "w") as handle:
                        handle.write(case["content"])
                    loaded = Rubric.from_file(path)
                return {"criteria": [[c.weight, c.requirement] for c in loaded.rubric]}
            if kind == "load_missing":
                Rubric.from_file(case["path"])
                return {"loaded": True}
    except Exception as exc:
        return _error(exc)
    raise ValueError(f"unknown case kind {kind}")
