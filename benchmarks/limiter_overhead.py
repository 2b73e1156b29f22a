"""The endpoint limiter's own CPU per call, beside an ``asyncio.Semaphore`` of the same size.

    .venv/bin/python benchmarks/limiter_overhead.py
    .venv/bin/python benchmarks/limiter_overhead.py --calls 1600 --slots 16

A user gathers a whole dataset at once: every call waits for a slot. Each call here takes a
slot, sleeps ``--sleep`` ms (no provider, no litellm: only the waiting is measured) and gives
it back; calls end in batches, as answers of a round reach one event loop together. Prints
the CPU per call of ``grading.limiter.AdaptiveLimiter`` (fixed at ``--slots``, so capacity
discovery does not change what is compared) and of a semaphore, median of ``--repeat`` runs,
measured one after the other in the same run. Not a test: it prints what it finds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grading.limiter import AdaptiveLimiter


async def _limiter(calls: int, slots: int, sleep: float) -> float:
    limiter = AdaptiveLimiter(slots, initial=slots)

    async def one() -> None:
        call = await limiter.acquire()
        await asyncio.sleep(sleep)
        limiter.release(call)

    started = time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    return time.process_time() - started


async def _semaphore(calls: int, slots: int, sleep: float) -> float:
    semaphore = asyncio.Semaphore(slots)

    async def one() -> None:
        async with semaphore:
            await asyncio.sleep(sleep)

    started = time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=16000)
    parser.add_argument("--slots", type=int, default=128)
    parser.add_argument("--sleep", type=float, default=2.0, help="ms each call holds its slot")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.calls} calls gathered at once, {args.slots} slots, {args.sleep} ms each; "
          f"CPU per call, median of {args.repeat}")
    for name, measure in (("semaphore", _semaphore), ("limiter", _limiter)):
        runs = [asyncio.run(measure(args.calls, args.slots, args.sleep / 1000))
                for _ in range(args.repeat)]
        print(f"{name:>10} {statistics.median(runs) / args.calls * 1e6:8.1f} us/call")


if __name__ == "__main__":
    main()
