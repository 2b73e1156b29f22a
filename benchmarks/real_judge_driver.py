"""Grades the labelled set with ``autorubric`` or ``rubric`` in its own venv (real_judge.py).

JSON on stdin: {"package", "api_base", "model", "criteria", "responses"}; JSON on stdout: one
{"verdicts": [...]} or {"error": ...} per response, and the seconds each took. Only the named
package and the standard library are imported: ``rubric`` gets a ``generate_fn`` over urllib,
as its README has users write one; ``autorubric`` its own litellm-based ``CriterionGrader``.
"""

import asyncio
import contextlib
import json
import sys
import time
import urllib.request


def _rubric_generate(api_base, model):
    async def generate(system_prompt, user_prompt, **_):
        # as rubric's README writes it: no structured output, 400 tokens, temperature 0
        body = {"model": model, "max_tokens": 400, "temperature": 0.0,
                "messages": [{"role": "system", "content": system_prompt},
                             {"role": "user", "content": user_prompt}]}

        def call():
            request = urllib.request.Request(
                api_base.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(request, timeout=600) as answer:
                return json.loads(answer.read())["choices"][0]["message"]["content"] or ""

        text = await asyncio.to_thread(call)
        # rubric 2.x's generate_fn returns the validated answer model, as its README's does
        from rubric.autograders.schemas import PerCriterionOutput

        start, end = text.find("{"), text.rfind("}")
        return PerCriterionOutput.model_validate_json(text[start:end + 1] if start >= 0 else text)

    return generate


def _verdict(item):
    verdict = getattr(item, "final_verdict", None) or getattr(item, "verdict", None)
    return getattr(verdict, "value", verdict)


async def grade_all(cfg):
    if cfg["package"] == "autorubric":
        from autorubric import Rubric
        from autorubric.graders import CriterionGrader
        from autorubric.llm import LLMConfig

        grader = CriterionGrader(llm_config=LLMConfig(
            model=cfg["model"], api_base=cfg["api_base"], api_key="none", max_retries=2,
            temperature=0.0))
        keyword = "grader"
    else:
        from rubric import Rubric
        from rubric.autograders import PerCriterionGrader

        grader = PerCriterionGrader(generate_fn=_rubric_generate(cfg["api_base"], cfg["model"]))
        keyword = "autograder"
    rubric = Rubric.from_dict(cfg["criteria"])
    out = []
    for response in cfg["responses"]:
        started = time.perf_counter()
        try:
            report = await rubric.grade(response["text"], query=response["query"],
                                        **{keyword: grader})
            out.append({"verdicts": [_verdict(item) for item in report.report or []],
                        "error": getattr(report, "error", None)})
        except Exception as exc:  # one response's failure is a figure, not the end
            out.append({"verdicts": [], "error": f"{type(exc).__name__}: {exc}"[:300]})
        out[-1]["seconds"] = time.perf_counter() - started
    return out


def main():
    cfg = json.load(sys.stdin)
    with contextlib.redirect_stdout(sys.stderr):  # what a package prints is not the answer
        out = asyncio.run(grade_all(cfg))
    json.dump(out, sys.stdout)


main()
