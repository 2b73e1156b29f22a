"""Pairwise comparison against single grading: calls per item and wall time, same run.

    .venv/bin/python benchmarks/pairwise.py                  # 1,000 pairs vs 1,000 grades
    .venv/bin/python benchmarks/pairwise.py --n 200 --criteria 3 --latency 0.02

The fake OpenAI-compatible provider (tests/fake_provider.py) runs in its own process on
127.0.0.1 and answers after ``--latency`` seconds (no concurrency cap: the library's limiter
and litellm's per-call CPU are what bound the rate). In one process, with the library's
defaults (litellm through ``LiteLLMGenerate``, the shared endpoint limiter):

- ``single``: N ``Rubric.grade`` calls with a PerCriterionGrader (one call per criterion);
- ``pairwise``: N ``Rubric.compare`` calls with a PairwiseGrader (each criterion asked in
  both orders: two calls per criterion), over pairs of the same N responses and another N.

Each mode makes one call before its clock starts (litellm's import and first connection).
The modes take turns (``--repeat``); the table shows each turn. Not a test: it prints what it
measures; wall figures on a shared machine are noisy (+-20%), the calls per item are exact.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.provider_process import ProviderProcess  # noqa: E402

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOG", "ERROR")
os.environ["RUBRIC_WORKBENCH_API_KEY"] = "bench-key"
MODEL = "openai/gpt-4o-mini"  # priced, as users' judges are; the fake answers any name


def rubric(k: int):
    from grading import Criterion, Rubric

    return Rubric([Criterion(name=f"c{i}", weight=(-3 if i == k - 1 else 10 - i),
                             requirement=f"The answer covers point number {i} of the "
                             "checklist, in a sentence or two") for i in range(k)])


def texts(n: int, words: int) -> list[tuple[str, str]]:
    return [(f"Question {i}: explain point {i % 17}?",
             " ".join(f"word{(i + j) % 97}" for j in range(words))) for i in range(n)]


async def single(rub, n: int) -> dict:
    from grading.autograders import PerCriterionGrader

    grader = PerCriterionGrader(on_error="report")
    rows = texts(n, 30)
    await rub.grade("warm-up answer", autograder=grader)
    started = time.perf_counter()
    results = await asyncio.gather(*(rub.grade(t, autograder=grader, query=q)
                                     for q, t in rows))
    return {"wall": time.perf_counter() - started,
            "failed": sum(r.score is None for r in results)}


async def pairwise(rub, n: int) -> dict:
    from grading.pairwise import PairwiseGrader

    grader = PairwiseGrader(on_error="report")
    a_rows, b_rows = texts(n, 30), texts(n, 34)
    await rub.compare("warm-up a", "warm-up b b", grader=grader)
    started = time.perf_counter()
    results = await asyncio.gather(*(rub.compare(a, b, grader=grader, query=q)
                                     for (q, a), (_q, b) in zip(a_rows, b_rows, strict=True)))
    return {"wall": time.perf_counter() - started,
            "failed": sum(r.winner is None for r in results),
            "b_wins": sum(r.winner == "B" for r in results)}


def measure(provider: ProviderProcess, mode: str, n: int, k: int, latency: float) -> dict:
    provider.reset(latency, None)
    rub = rubric(k)
    result = asyncio.run((single if mode == "single" else pairwise)(rub, n))
    warm_up = k if mode == "single" else 2 * k
    calls = provider.stats()["requests"] - warm_up
    return {**result, "calls": calls, "per_item": calls / n, "rate": calls / result["wall"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="grades and pairs (default 1000)")
    parser.add_argument("--criteria", type=int, default=4, help="rubric size (default 4)")
    parser.add_argument("--latency", type=float, default=0.005,
                        help="provider latency per call, seconds (default 0.005)")
    parser.add_argument("--repeat", type=int, default=1, help="turns of both modes")
    args = parser.parse_args()
    os.environ["RUBRIC_WORKBENCH_MODEL"] = MODEL
    provider = ProviderProcess()
    os.environ["RUBRIC_WORKBENCH_API_BASE"] = provider.api_base
    try:
        rows = []
        for turn in range(1, args.repeat + 1):
            for mode in ("single", "pairwise"):
                rows.append((turn, mode, measure(provider, mode, args.n, args.criteria,
                                                 args.latency)))
    finally:
        provider.stop()
    print(f"{args.n} items, {args.criteria} criteria, provider latency {args.latency * 1000:g} "
          "ms, library defaults")
    print(f"{'turn':>4}  {'mode':<9} {'calls':>6} {'calls/item':>10} {'wall s':>7} "
          f"{'calls/s':>8} {'failed':>6}")
    for turn, mode, r in rows:
        print(f"{turn:>4}  {mode:<9} {r['calls']:>6} {r['per_item']:>10.1f} {r['wall']:>7.1f} "
              f"{r['rate']:>8.0f} {r['failed']:>6}")
    pair, one = (next(r for _t, m, r in reversed(rows) if m == mode)
                 for mode in ("pairwise", "single"))
    print(f"pairwise / single (last turn): calls x{pair['calls'] / one['calls']:.2f}, "
          f"wall x{pair['wall'] / one['wall']:.2f}")


if __name__ == "__main__":
    main()
