"""Runs differential cases through a ``rubric``-shaped package: the same case code for both
sides, so a difference found is the packages', never the harness's.

As a script it runs the real ``rubric`` (1.3.x or 2.x) inside a test-only venv (see
tests/compat/venvs.py): JSON cases on stdin, JSON results on stdout. tests/compat/ours.py
imports it and runs ``grading`` in-process. Only the package named and the standard library
are imported here.
"""

import asyncio
import importlib
import json
import os
import re
import sys
import tempfile
import warnings
from types import SimpleNamespace

TOKEN = re.compile(r"REQ\d{3}")


def _optional(module):
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def load(package):
    """The names the cases use, from ``rubric`` or ``grading`` (2.x has no utils/penalty)."""
    root = importlib.import_module(package)
    autograders = importlib.import_module(f"{package}.autograders")
    return SimpleNamespace(
        version=getattr(root, "__version__", ""),
        Rubric=root.Rubric,
        LengthPenalty=getattr(root, "LengthPenalty", None),
        graders={
            "per_criterion": autograders.PerCriterionGrader,
            "one_shot": autograders.PerCriterionOneShotGrader,
            "holistic": autograders.RubricAsJudgeGrader,
        },
        schemas=_optional(f"{package}.autograders.schemas"),
        utils=_optional(f"{package}.utils"),
    )


def wrap(payload, how):
    text = json.dumps(payload)
    if how == "fence":
        return f"```json\n{text}\n```"
    if how == "prose":
        return f"Here is my evaluation.\n{text}\nLet me know if you need more."
    return text


def scripted(case, api, *, models):
    """The judge of the case, answering in rubric's JSON dialect (text, or 2.x's models)."""
    verdicts = case["verdicts"]

    async def generate(system_prompt, user_prompt, **kwargs):
        tokens = TOKEN.findall(user_prompt)
        grader = case["grader"]
        if grader == "per_criterion":
            payload = {"criterion_status": verdicts[tokens[0]], "explanation": "e " + tokens[0]}
            if models:
                return api.schemas.PerCriterionOutput(**payload)
        elif grader == "one_shot":
            payload = {"criteria_evaluations": [
                {"criterion_number": i, "criterion_status": verdicts[t], "explanation": "e " + t}
                for i, t in enumerate(tokens, start=1)]}
            if models:
                return api.schemas.OneShotOutput(criteria_evaluations=[
                    api.schemas.CriterionEvaluation(**e)
                    for e in payload["criteria_evaluations"]])
        else:
            payload = {"overall_score": case["holistic_score"], "explanation": "overall"}
            if models:
                return api.schemas.RubricAsJudgeOutput(**payload)
        return wrap(payload, case.get("wrap", "bare"))

    return generate


def _value(verdict):
    return getattr(verdict, "value", verdict)


def report_dict(report):
    return {
        "score": report.score,
        "raw_score": report.raw_score,
        "llm_raw_score": report.llm_raw_score,
        "verdicts": None if report.report is None else [_value(r.verdict) for r in report.report],
        "reasons": None if report.report is None else [r.reason for r in report.report],
        "notes": list(getattr(report, "notes", None) or []),
    }


def error_dict(exc):
    return {"error": type(exc).__name__, "is_value_error": isinstance(exc, ValueError),
            "message": str(exc)}


async def run_case(case, api, *, models, options=None):
    """One case's result (or how it failed); ``options`` go to every grader."""
    kind = case["kind"]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if kind == "grade":
                chosen = {"normalize": case["normalize"], **(options or {})}
                if case.get("length_penalty") and not models:
                    chosen["length_penalty"] = api.LengthPenalty(**case["length_penalty"])
                grader = api.graders[case["grader"]](scripted(case, api, models=models),
                                                     **chosen)
                report = await api.Rubric.from_dict(case["rubric"]).grade(
                    case["to_grade"], autograder=grader, query=case.get("query"))
                return report_dict(report)
            if kind == "parse_thinking":
                return dict(api.utils.parse_thinking_output(case["text"]))
            if kind == "normalize":
                result = api.utils.normalize_to_grade_input(case["value"])
                return {"result": dict(result),
                        "warned": any(issubclass(w.category, UserWarning) for w in caught)}
            if kind == "length_penalty":
                config = api.LengthPenalty(**case["config"])
                return {"penalty": api.utils.compute_length_penalty(case["value"], config)}
            if kind == "parse_json":
                return {"result": api.utils.parse_json_to_dict(case["text"])}
            if kind == "load":
                with tempfile.TemporaryDirectory() as folder:
                    path = os.path.join(folder, "rubric" + case["ext"])
                    with open(path, "w") as handle:
                        handle.write(case["content"])
                    loaded = api.Rubric.from_file(path)
                return {"criteria": [[c.weight, c.requirement] for c in loaded.rubric]}
            if kind == "load_missing":
                api.Rubric.from_file(case["path"])
                return {"loaded": True}
    except Exception as exc:  # the comparison includes how it fails
        return error_dict(exc)
    raise ValueError(f"unknown case kind {kind}")


async def main():
    api = load("rubric")
    cases = json.load(sys.stdin)
    models = api.version.startswith("2.")
    results = [await run_case(case, api, models=models) for case in cases]
    json.dump({"version": api.version, "results": results}, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
