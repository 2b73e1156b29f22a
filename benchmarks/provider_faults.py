"""Figures for provider faults: time to an error on a hang and on a trickling body, memory on a
huge body, next to a healthy call measured in the same run (the reference).

    .venv/bin/python benchmarks/provider_faults.py [--huge-mb 100] [--cap 60]

Each scenario is cut at ``--cap`` seconds (printed as "> cap"). Run it with another checkout
first on PYTHONPATH to measure that code the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import inspect
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after PYTHONPATH: a checkout given there is the one measured


def _fault_module():
    spec = importlib.util.spec_from_file_location("fault_provider",
                                                  ROOT / "tests" / "fault_provider.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["fault_provider"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


async def _grade(api_base: str, *, timeout: float, cap: float, **grader) -> tuple[float, str]:
    from grading import Criterion, Rubric
    from grading.autograders import PerCriterionGrader
    from grading.llm import LiteLLMGenerate

    accepted = inspect.signature(PerCriterionGrader).parameters
    grader = {k: v for k, v in grader.items() if k in accepted}
    generate = LiteLLMGenerate("openai/fake-judge", api_base=api_base, api_key="k",
                               timeout=timeout)
    rubric = Rubric([Criterion(name="a", requirement="A")])
    started = time.monotonic()
    try:
        result = await asyncio.wait_for(rubric.grade("x", autograder=PerCriterionGrader(
            generate, on_error="report", retry_base_delay=0.25, retry_max_delay=30.0,
            **grader)), cap)
    except TimeoutError:
        return cap, f"> {cap:g} s (still trying)"
    except Exception as exc:
        return time.monotonic() - started, f"raised {type(exc).__name__}: {str(exc)[:120]}"
    outcome = f"score={result.score}" if result.error is None else f"error: {result.error[:160]}"
    return time.monotonic() - started, outcome


def _peak_mb() -> float:
    """This process's peak resident memory (VmHWM: not inherited across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _huge_child(api_base: str, megabytes: int) -> None:
    import litellm  # noqa: F401  (its import is not the answer's cost)
    import openai  # noqa: F401

    before = _peak_mb()
    seconds, outcome = asyncio.run(_grade(api_base, timeout=120, cap=300, transport_retries=0,
                                          max_retries=0))
    peak = _peak_mb()
    print(json.dumps({"seconds": seconds, "outcome": outcome, "grown_mb": peak - before,
                      "peak_mb": peak}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--huge-mb", type=int, default=100)
    parser.add_argument("--cap", type=float, default=60.0)
    parser.add_argument("--child-huge", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_huge:
        _huge_child(args.child_huge, args.huge_mb)
        return
    faults = _fault_module()
    server = faults.FaultProvider().start()
    import grading

    print(f"code measured: {Path(grading.__file__).parent.parent}")
    rows = []
    asyncio.run(_grade(server.api_base, timeout=30, cap=300))  # warm-up: litellm's import
    seconds, outcome = asyncio.run(_grade(server.api_base, timeout=2, cap=args.cap))
    rows.append(("healthy call (reference)", seconds, outcome))
    server.always(faults.Reply(hang=3600))
    seconds, outcome = asyncio.run(_grade(server.api_base, timeout=2, cap=args.cap,
                                          transport_retries=10))
    rows.append(("hang, timeout 2 s, 10 retries, default deadline", seconds, outcome))
    seconds, outcome = asyncio.run(_grade(server.api_base, timeout=2, cap=args.cap,
                                          transport_retries=10, call_deadline=5))
    rows.append(("hang, timeout 2 s, 10 retries, call_deadline 5 s", seconds, outcome))
    server.reset()
    server.always(faults.Fault(kind="trickle", interval=1.0))
    seconds, outcome = asyncio.run(_grade(server.api_base, timeout=3, cap=args.cap,
                                          transport_retries=0))
    rows.append(("body at 1 byte/s, timeout 3 s, no retry", seconds, outcome))
    server.reset()
    server.always(faults.Fault(kind="huge", size=args.huge_mb * 1024 * 1024))
    child = subprocess.run([sys.executable, __file__, "--child-huge", server.api_base,
                            "--huge-mb", str(args.huge_mb)], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    server.stop()
    for name, seconds, outcome in rows:
        print(f"{name:<52} {seconds:7.1f} s  {outcome}")
    try:
        huge = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"{args.huge_mb} MB answer: {huge['seconds']:.1f} s, memory grew "
              f"{huge['grown_mb']:.0f} MB (peak {huge['peak_mb']:.0f} MB); {huge['outcome']}")
    except (IndexError, ValueError, KeyError):
        print(f"{args.huge_mb} MB answer: the child failed: {child.stderr[-500:]}")


if __name__ == "__main__":
    main()
