"""The kept Agreement report after a grade lands, in the page's process (issue 41): advanced
over the grade (``agreement_kept.advance`` with the judges' inputs advanced over it) beside
built anew (what the page did before session 46), in turns, in the same run.

Each case runs in a process of its own on a fresh copy of the SQLite world ``scale.py
--keep DIR`` built, with 60 of the last run's grades made transient failures
(``judges_advance.py --setup 60``): the report kept through a ``KeptSlot`` (as the page
keeps it), one failure graded again (``judges_advance.py --land``), then the judges' inputs
and the report read again, timed, and its peak RSS over the process before it. Then the
trust share made on it (``trust_report.judges_part``), timed: the next thing the page makes.

    .venv/bin/python benchmarks/kept_after_grade.py --keep /work/bench/w100 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from proc_memory import resident_mb

ROOT = Path(__file__).resolve().parent.parent


def child(db: str, build: bool, version: int, dataset: int) -> None:
    sys.path.insert(0, str(ROOT))
    from storage.engine import create_db_engine, make_session_factory
    from storage.services import (
        agreement_inputs_store,
        agreement_judge_store,
        agreement_kept,
        trust_report,
    )
    from storage.services.agreement_judge_counts import judge_stamp
    from storage.services.agreement_sources import data_stamp

    sessions = make_session_factory(create_db_engine(db))

    def inputs():
        return agreement_inputs_store.kept_inputs(
            sessions, version, dataset,
            lambda: agreement_judge_store.kept_patterns(sessions, version, dataset),
            judge_stamp(data_stamp(sessions, version, dataset)))

    slot = agreement_kept.KeptSlot()
    slot.report(sessions, version, dataset, inputs())
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "judges_advance.py"), "--db", db,
                    "--version", str(version), "--dataset", str(dataset), "--land"],
                   check=True, capture_output=True)
    before = resident_mb()
    started = time.perf_counter()
    now = inputs()
    if build:
        slot._kept = None  # as the slot did after a grade: its report not kept
    report = slot.report(sessions, version, dataset, now)
    report_s = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    trust_report.judges_part(sessions, report)
    print(json.dumps({"report_s": report_s, "trust_s": time.perf_counter() - started,
                      "resident_before": before, "peak": peak}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", help="the folder scale.py --keep built")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", choices=["advanced", "built"], help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--ids", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.db, args.child == "built", *args.ids)
        return
    if not args.keep:
        parser.error("--keep is needed: the folder scale.py --keep built")
    world = Path(args.keep) / f"scale-{args.size}.db"
    ids = json.loads((Path(args.keep) / f"world-sqlite-{args.size}.json").read_text())
    version, dataset = ids["version_id"], ids["dataset_id"]
    found: dict[str, list[dict]] = {"advanced": [], "built": []}
    for _round in range(args.rounds):
        for case in found:
            with tempfile.TemporaryDirectory() as tmp:
                copy = Path(tmp) / world.name
                shutil.copy(world, copy)
                db = f"sqlite:///{copy}"
                subprocess.run([sys.executable, str(ROOT / "benchmarks" / "judges_advance.py"),
                                "--db", db, "--version", str(version), "--dataset",
                                str(dataset), "--setup", "60"], check=True, capture_output=True)
                out = subprocess.run([sys.executable, __file__, "--child", case, "--db", db,
                                      "--ids", str(version), str(dataset)],
                                     check=True, capture_output=True, text=True).stdout
                found[case].append(json.loads(out.strip().splitlines()[-1]))
                print(case, found[case][-1], flush=True)
    print("\n| after a grade | advanced | built anew |\n|---|---:|---:|")
    for name, unit in (("report_s", "s"), ("trust_s", "s"), ("peak", "MB")):
        values = [statistics.median(r[name] for r in found[case]) for case in found]
        print(f"| {name} ({unit}, median) | {values[0]:.2f} | {values[1]:.2f} |")


if __name__ == "__main__":
    main()
