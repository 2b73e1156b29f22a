"""The capacity estimate's opening, simulated with our own CPU as a bound.

    .venv/bin/python benchmarks/limiter_simulation.py
    .venv/bin/python benchmarks/limiter_simulation.py --work 240 --openings 4,8

Runs ``grading.capacity.CapacityEstimate`` against the simulated provider of
``tests/grading/capacity_simulation.py`` (a fake clock; a cap, 429 beyond it, refused calls held as
long as answered ones) with one core of our own: launching a call and taking in its answer
cost ``--launch-ms`` and ``--answer-ms`` of CPU, one after another, as litellm's work does in
one event loop (the defaults are what it costs here). Beside each row, the same calls made
by a client that knew the cap from the start (the benchmark's bare client), in the same
simulation. With these defaults and a fixed opening of 4 it reproduced
``grading_throughput.py``'s library row at a cap of 128 before the opening was scaled by the
work (~1.16x here against 1.11-1.18x measured then): the loss is the slow start, while fewer
calls are in flight than the core could serve. Each row varies the opening limit and the
most the limit grows by in a round (``INITIAL_LIMIT``, ``MAX_STEP``); the row marked
"shipped" opens as the library and the runner do, by the work waiting
(``CapacityEstimate.expect``). Not a test: it prints what it finds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grading.capacity import CapacityEstimate
from grading.capacity import estimate as rules  # where MAX_STEP is read
from tests.grading.capacity_simulation import HELD, Simulation, cap_of, flat


def simulate(cap: int, opening: int | None, work: int, latency: float, cpu: dict,
             knew: bool = False) -> Simulation:
    """``opening`` None: the shipped opening, widened by the work waiting."""
    estimate = CapacityEstimate() if opening is None else CapacityEstimate(initial=opening)
    if knew:
        estimate.seed(float(cap))
    elif opening is None:
        estimate.expect(work)
    return Simulation(estimate, cap_of(cap), flat(latency), refusal_latency=HELD, work=work,
                      **cpu).run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--caps", default="6,8,32,128")
    parser.add_argument("--work", type=int, default=1600, help="calls per run")
    parser.add_argument("--latency", type=float, default=0.2, help="provider latency, s")
    parser.add_argument("--launch-ms", type=float, default=2.2)
    parser.add_argument("--answer-ms", type=float, default=1.6)
    parser.add_argument("--openings", default="4,8,10,16", help="INITIAL_LIMIT values")
    parser.add_argument("--steps", default="16,32", help="MAX_STEP values")
    args = parser.parse_args()
    cpu = {"launch_cpu": args.launch_ms / 1000, "answer_cpu": args.answer_ms / 1000}
    caps = [int(c) for c in args.caps.split(",")]
    print(f"{args.work} calls, {args.latency} s latency, {args.launch_ms} + {args.answer_ms} "
          f"ms of CPU per call; each cell: time vs a client that knew the cap, 429s")
    print(f"{'opening':>7} {'step':>4}  " + "  ".join(f"{'cap ' + str(c):>16}" for c in caps))
    shipped_step = rules.MAX_STEP
    try:
        for step in [int(s) for s in args.steps.split(",")]:
            rules.MAX_STEP = step
            openings: list[int | None] = [int(o) for o in args.openings.split(",")]
            for opening in ([None] if step == shipped_step else []) + openings:
                cells = []
                for cap in caps:
                    ours = simulate(cap, opening, args.work, args.latency, cpu)
                    knew = simulate(cap, opening or 4, args.work, args.latency, cpu,
                                    knew=True)
                    cells.append(f"{ours.now / knew.now:5.2f}x {ours.refused_share:5.1%}"
                                 .rjust(16))
                label = "by work" if opening is None else str(opening)
                mark = " (shipped)" if opening is None else ""
                print(f"{label:>7} {step:>4}  " + "  ".join(cells) + mark, flush=True)
    finally:
        rules.MAX_STEP = shipped_step


if __name__ == "__main__":
    main()
