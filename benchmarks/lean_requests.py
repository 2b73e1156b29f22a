"""CPU per judge call with and without the lean requests (``grading.lean_completions``).

    .venv/bin/python benchmarks/lean_requests.py            # 100 x 8 calls, 3 rounds
    .venv/bin/python benchmarks/lean_requests.py --n 200 --repeat 5

The library's default grader (``PerCriterionGrader``) grades N responses x K criteria,
gathered, against the local fake provider with no cap and 5 ms of latency, so that our own
CPU is the bound. Each measurement runs in a fresh process and makes a first call before
its clock starts; ``sdk`` is the same process with our capped OpenAI client left as the SDK
makes it (every request through the SDK's transform), ``lean`` the shipped one. The two
take turns, so a slow minute of a shared machine falls on both. Prints the CPU per call
and the wall of every run, and the medians. Not a test: it prints what it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import grading_throughput as bench  # noqa: E402

from tests.provider_process import ProviderProcess  # noqa: E402


def child(mode: str, api_base: str, n: int, k: int) -> None:
    if mode == "sdk":
        from grading import http_limits

        http_limits.use_lean_completions = lambda client: client  # the SDK's own path
    bench._warm_up(api_base, "library")
    cpu = bench.cpu_seconds()
    result = asyncio.run(bench._library(api_base, n, k))
    result["cpu_ms"] = 1000 * (bench.cpu_seconds() - cpu) / (n * k)
    print(json.dumps(result), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="responses")
    parser.add_argument("--k", type=int, default=8, help="criteria")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of sdk, lean")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--api-base", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.api_base, args.n, args.k)
        return
    server = ProviderProcess()
    server.reset(0.005, None)
    runs: dict[str, list[dict]] = {"sdk": [], "lean": []}
    env = {**os.environ, "RUBRIC_WORKBENCH_CAPACITY_MEMORY": "0"}
    print(f"N={args.n} x K={args.k} = {args.n * args.k} calls per run, no cap, 5 ms latency; "
          f"{os.cpu_count()} CPUs (shared machine: noisy figures)", flush=True)
    try:
        for _ in range(args.repeat):
            for mode in runs:
                out = subprocess.run(
                    [sys.executable, __file__, "--child", mode, "--api-base", server.api_base,
                     "--n", str(args.n), "--k", str(args.k)],
                    cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=True)
                result = json.loads(out.stdout.strip().splitlines()[-1])
                runs[mode].append(result)
                print(f"{mode:<5} CPU {result['cpu_ms']:5.2f} ms/call  wall {result['wall']:6.2f} s"
                      f"  correct {result['correct']}/{args.n}", flush=True)
    finally:
        server.stop()
    sdk, lean = ({key: statistics.median(r[key] for r in runs[mode]) for key in ("cpu_ms", "wall")}
                 for mode in ("sdk", "lean"))
    print(f"medians: sdk {sdk['cpu_ms']:.2f} ms/call, {sdk['wall']:.2f} s; lean "
          f"{lean['cpu_ms']:.2f} ms/call, {lean['wall']:.2f} s "
          f"({lean['cpu_ms'] - sdk['cpu_ms']:+.2f} ms a call)")


if __name__ == "__main__":
    main()
