"""Grading throughput against a local fake provider with a concurrency cap (prints figures).

    .venv/bin/python benchmarks/grading_throughput.py --n 200 --k 8 --cap 32 --latency 0.2

The fake OpenAI-compatible provider (tests/fake_provider.py) runs in a child process on
127.0.0.1, answers after a fixed latency and answers 429 beyond ``cap`` concurrent requests.
N responses x K criteria are graded per-criterion through the job runner (SQLite file
database, cache on), then once more (every call a cache hit). The bare reference is litellm
``acompletion`` for the same number of calls with the same prompts under an
``asyncio.Semaphore(cap)``: the best a litellm client can do on one event loop.
Not a test: it prints what it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from storage.services.reviewers import command_line_actor

BENCHMARK = command_line_actor("benchmark")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOG", "ERROR")
os.environ["RUBRIC_WORKBENCH_API_KEY"] = "bench-key"

MODEL = "openai/bench-judge"
_SERVER = textwrap.dedent("""
    import json, sys
    from tests.fake_provider import FakeProvider
    latency, cap = float(sys.argv[1]), int(sys.argv[2])
    provider = FakeProvider().start()
    def configure():
        provider.latency, provider.max_concurrency = latency, cap
    configure()
    print(provider.api_base, flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "stats":
            print(json.dumps({"requests": provider.requests,
                              "rate_limited": provider.rate_limited,
                              "max_in_flight": provider.max_in_flight}), flush=True)
        elif command == "reset":
            provider.reset()
            configure()
            print("{}", flush=True)
""")


class Server:
    """The fake provider in a child process, so its threads do not share our GIL or RSS."""

    def __init__(self, latency: float, cap: int):
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(latency), str(cap)], cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.api_base = self.process.stdout.readline().strip()

    def _ask(self, command: str) -> dict:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def stats(self) -> dict:
        return self._ask("stats")

    def reset(self) -> None:
        self._ask("reset")

    def stop(self) -> None:
        self.process.stdin.close()
        self.process.terminate()
        self.process.wait(10)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def criteria(k: int):
    from grading.types import Criterion

    return [Criterion(name=f"c{i}", requirement=f"The answer covers point number {i} of the "
                      "checklist, in a sentence or two", weight=10 - i) for i in range(k)]


def responses(n: int) -> list[dict]:
    body = "The recommended dose is 500 mg every six hours, no more than 4 g a day. " * 6
    return [{"id": f"r{i}", "query": f"What is the dose? (case {i})", "text": f"{i}: {body}"}
            for i in range(n)]


async def bare_reference(api_base: str, n: int, k: int, cap: int) -> tuple[float, int]:
    """litellm.acompletion for N*K calls (same prompts) under a semaphore at the cap."""
    import litellm

    from grading.prompts import (
        PER_CRITERION_SYSTEM_PROMPT,
        per_criterion_response_format,
        per_criterion_user_prompt,
    )

    crits = criteria(k)
    rows = responses(n)
    response_format = per_criterion_response_format()
    semaphore = asyncio.Semaphore(cap)
    failures = 0

    async def one(row: dict, criterion) -> None:
        nonlocal failures
        messages = [{"role": "system", "content": PER_CRITERION_SYSTEM_PROMPT},
                    {"role": "user",
                     "content": per_criterion_user_prompt(criterion, row["text"], row["query"])}]
        for _attempt in range(20):
            async with semaphore:
                try:
                    await litellm.acompletion(
                        model=MODEL, api_base=api_base, api_key="bench-key", messages=messages,
                        response_format=response_format, temperature=0.0, timeout=60,
                        num_retries=0)
                    return
                except litellm.RateLimitError:
                    pass
            await asyncio.sleep(0.05)
        failures += 1

    async def worker(queue: asyncio.Queue) -> None:
        while True:
            try:
                row, criterion = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            await one(row, criterion)

    queue: asyncio.Queue = asyncio.Queue()
    for row in rows:
        for criterion in crits:
            queue.put_nowait((row, criterion))
    started, cpu = time.perf_counter(), time.process_time()
    # cap*2 feeders keep the semaphore saturated without holding N*K coroutines at once.
    await asyncio.gather(*(worker(queue) for _ in range(cap * 2)))
    return time.perf_counter() - started, time.process_time() - cpu, failures


def run_through_runner(sessions, version_id: int, dataset_id: int, api_base: str, cap: int,
                       use_cache: bool = True):
    from storage.jobs import queue, run_progress
    from storage.jobs.runner import execute_run
    from storage.services import runs

    run = runs.create_run(sessions, rubric_version_id=version_id, dataset_id=dataset_id,
                          grader="per_criterion", model=MODEL,
                          settings={"api_base": api_base,
                                    "extra": {"concurrency": cap, "use_cache": use_cache}},
                                        actor=BENCHMARK)
    assert queue.claim_run(sessions, run.id, "bench")
    started, cpu = time.perf_counter(), time.process_time()
    result = asyncio.run(execute_run(sessions, run.id, worker_id="bench"))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return wall, cpu, result, run_progress(sessions, run.id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="responses")
    parser.add_argument("--k", type=int, default=8, help="criteria")
    parser.add_argument("--cap", type=int, default=32, help="provider concurrency cap")
    parser.add_argument("--latency", type=float, default=0.2, help="provider latency, seconds")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="the runner's starting concurrency (default: the cap; above it, "
                             "the provider answers 429 until the limiter adapts)")
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    args = parser.parse_args()
    n, k, cap, latency = args.n, args.k, args.cap, args.latency
    concurrency = args.concurrency or cap

    from storage.engine import open_database
    from storage.services import datasets, rubrics

    server = Server(latency, cap)
    tmp = tempfile.TemporaryDirectory(prefix="rw-bench-")
    try:
        import litellm  # noqa: F401  (import cost outside every timing)

        asyncio.run(bare_reference(server.api_base, 4, 2, cap))  # warm-up
        server.reset()
        rss_start = peak_rss_mb()

        sessions = open_database(args.db or f"sqlite:///{tmp.name}/bench.db")
        version = rubrics.create_rubric(sessions, f"bench {time.time()}", criteria(k),
                                        actor=BENCHMARK)
        dataset = datasets.create_dataset(sessions, f"bench {time.time()}",
                                          responses=responses(n), actor=BENCHMARK)
        wall, cpu, result, progress = run_through_runner(sessions, version.id, dataset.id,
                                                         server.api_base, concurrency)
        first = server.stats()
        rss_runner = peak_rss_mb()
        server.reset()
        cached_wall, _cpu, _cached, cached_progress = run_through_runner(
            sessions, version.id, dataset.id, server.api_base, concurrency)
        cached = server.stats()
        rss_cached = peak_rss_mb()
        server.reset()

        reference, reference_cpu, reference_failures = asyncio.run(
            bare_reference(server.api_base, n, k, cap))
        reference_stats = server.stats()
    finally:
        server.stop()
        tmp.cleanup()

    calls = n * k
    limit = calls * latency / cap
    print(f"N={n} responses x K={k} criteria = {calls} calls; cap {cap}; latency {latency} s;"
          f" runner starts at concurrency {concurrency}")
    print(f"runner wall time           {wall:8.2f} s   ({calls / wall:.0f} calls/s)")
    print(f"theoretical limit N*K*L/cap {limit:8.2f} s")
    print(f"bare litellm reference     {reference:8.2f} s   ({calls / reference:.0f} calls/s;"
          f" {reference_stats['rate_limited']} x 429, {reference_failures} failed)")
    print(f"runner / reference         {wall / reference:8.2f} x  (target <= 1.2)")
    print(f"CPU time: runner {cpu:.2f} s ({cpu / calls * 1000:.1f} ms/call), reference "
          f"{reference_cpu:.2f} s ({reference_cpu / calls * 1000:.1f} ms/call)")
    print(f"provider calls             {first['requests']:8d}   (429s: {first['rate_limited']};"
          f" max in flight {first['max_in_flight']})")
    print(f"grades: done {progress.done}, failed {progress.failed} of {progress.total};"
          f" run {result.status}")
    print(f"cached re-run              {cached_wall:8.2f} s   provider calls "
          f"{cached['requests']}; cache hits {cached_progress.cache_hits};"
          f" done {cached_progress.done}, failed {cached_progress.failed}")
    print(f"peak RSS                   {rss_start:8.1f} MB before, {rss_runner:.1f} MB after the"
          f" run, {rss_cached:.1f} MB after the cached re-run")


if __name__ == "__main__":
    main()
