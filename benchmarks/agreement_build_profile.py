"""Where the Agreement page's cold build goes (issue 41): ``agreement_kept.build`` with the
judges' count read from the database, timed step by step and profiled (cProfile), on a
database ``scale.py --keep`` built.

    PYTHONPATH=$PWD python benchmarks/agreement_build_profile.py DIR [--size 100000] [--top 40]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from pathlib import Path

from storage.engine import open_database
from storage.services import agreement_judge_store, agreement_kept, human_baseline


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sort", default="cumulative")
    args = parser.parse_args()
    folder = Path(args.dir)
    sessions = open_database(f"sqlite:///{folder / f'scale-{args.size}.db'}")
    world = json.loads((folder / f"world-sqlite-{args.size}.json").read_text())
    version, dataset = world["version_id"], world["dataset_id"]
    started = time.perf_counter()
    judges = agreement_judge_store.kept_patterns(sessions, version, dataset)
    print(f"judges' count from the database: {time.perf_counter() - started:.2f} s, "
          f"{len(judges.rows)} rows")
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    kept = agreement_kept.build(sessions, version, dataset, judges)
    human_baseline.report_baseline(kept.report)
    profile.disable()
    print(f"report built + baseline: {time.perf_counter() - started:.2f} s (profiled)")
    pstats.Stats(profile).sort_stats(args.sort).print_stats(args.top)
    started = time.perf_counter()
    kept = agreement_kept.build(sessions, version, dataset, judges)
    human_baseline.report_baseline(kept.report)
    print(f"report built + baseline again: {time.perf_counter() - started:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
