"""Runs differential cases through the real ``rubric`` package (1.3.x or 2.x).

Runs inside a test-only venv (see tests/compat/venvs.py): JSON cases on stdin, JSON results
on stdout. Only the installed ``rubric`` and the standard library are used here.
"""

import asyncio
import json
import os
import re
import sys
import tempfile
import warnings

import rubric
from rubric import Rubric

V2 = rubric.__version__.startswith("2.")
TOKEN = re.compile(r"REQ\d{3}")

if V2:
    from rubric.autograders import (
        PerCriterionGrader,
        PerCriterionOneShotGrader,
        RubricAsJudgeGrader,
    )
    from rubric.autograders.schemas import (
        CriterionEvaluation,
        OneShotOutput,
        PerCriterionOutput,
        RubricAsJudgeOutput,
    )
else:
    from rubric import LengthPenalty
    from rubric.autograders import (
        PerCriterionGrader,
        PerCriterionOneShotGrader,
        RubricAsJudgeGrader,
    )
    from rubric.utils import (
        compute_length_penalty,
        normalize_to_grade_input,
        parse_json_to_dict,
        parse_thinking_output,
    )

GRADERS = {
    "per_criterion": PerCriterionGrader,
    "one_shot": PerCriterionOneShotGrader,
    "holistic": RubricAsJudgeGrader,
}


def wrap(payload, how):
    text = json.dumps(payload)
    if how == "fence":
        return f"```json\n{text}\n```"
    if how == "prose":
        return f"Here is my evaluation.\n{text}\nLet me know if you need more."
    return text


def scripted(case):
    verdicts = case["verdicts"]

    async def generate(system_prompt, user_prompt, **kwargs):
        tokens = TOKEN.findall(user_prompt)
        grader = case["grader"]
        if grader == "per_criterion":
            payload = {"criterion_status": verdicts[tokens[0]], "explanation": "e " + tokens[0]}
            model = PerCriterionOutput if V2 else None
        elif grader == "one_shot":
            payload = {"criteria_evaluations": [
                {"criterion_number": i, "criterion_status": verdicts[t], "explanation": "e " + t}
                for i, t in enumerate(tokens, start=1)]}
            model = OneShotOutput if V2 else None
        else:
            payload = {"overall_score": case["holistic_score"], "explanation": "overall"}
            model = RubricAsJudgeOutput if V2 else None
        if V2:
            if grader == "one_shot":
                return OneShotOutput(criteria_evaluations=[
                    CriterionEvaluation(**e) for e in payload["criteria_evaluations"]])
            return model(**payload)
        return wrap(payload, case.get("wrap", "bare"))

    return generate


def report_dict(report):
    return {
        "score": report.score,
        "raw_score": report.raw_score,
        "llm_raw_score": report.llm_raw_score,
        "verdicts": None if report.report is None else [r.verdict for r in report.report],
        "reasons": None if report.report is None else [r.reason for r in report.report],
    }


def error_dict(exc):
    return {"error": type(exc).__name__, "is_value_error": isinstance(exc, ValueError),
            "message": str(exc)}


async def run_case(case):
    kind = case["kind"]
    try:
        if kind == "grade":
            options = {"normalize": case["normalize"]}
            if case.get("length_penalty") and not V2:
                options["length_penalty"] = LengthPenalty(**case["length_penalty"])
            grader = GRADERS[case["grader"]](scripted(case), **options)
            rubric_obj = Rubric.from_dict(case["rubric"])
            report = await rubric_obj.grade(case["to_grade"], autograder=grader,
                                            query=case.get("query"))
            return report_dict(report)
        if kind == "parse_thinking":
            return parse_thinking_output(case["text"])
        if kind == "normalize":
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = normalize_to_grade_input(case["value"])
            return {"result": result, "warned": bool(caught)}
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
        raise ValueError(f"unknown case kind {kind}")
    except Exception as exc:  # the comparison includes how it fails
        return error_dict(exc)


async def main():
    cases = json.load(sys.stdin)
    results = [await run_case(case) for case in cases]
    json.dump({"version": rubric.__version__, "results": results}, sys.stdout)


asyncio.run(main())
