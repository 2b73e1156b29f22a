"""The judge trust report at scale (issue 41): cold, and after one saved verdict, on the world
``benchmarks/scale.py --keep DIR`` built (100,000 responses x 3 runs x 8 criteria, a panel,
two reviewers on 5%).

Each case runs in a process of its own, so that its peak RSS (``ru_maxrss``) is its own:

- **cold**: the agreement report as the page reads it (the judges' count kept in the
  database), then ``trust_report.build_trust`` on it, timed;
- **after one verdict**: the same, then one human verdict saved, the agreement report read
  again, and the trust report built again keeping what depends only on the judges
  (``trust_report.judges_part``: their verdicts, positions, length slopes, stability), as
  the Agreement page does; checked identical to a fresh build at the same stamp.

Printed for each: wall seconds and CPU seconds (``time.process_time``: the machine is
shared, CPU is the figure that says what the report costs), the process's RSS before the
trust report and its peak after (MB), and beside them the database's own read of every
judge verdict (``SELECT response_id, criterion_id, verdict`` of the runs' grades): the least
any report over these verdicts pays.

    .venv/bin/python benchmarks/trust_scale.py --keep /work/bench/trust41 --size 100000

``--reference-tree DIR``: also build the trust report with the code of another source tree
(e.g. ``git archive <commit> | tar -x -C DIR``), in a process of its own, on the same
database state, and say whether every figure is identical (the reports' ``repr``), or which
floats differ and by how much.

The kept database is written to (a verdict per "after" case): use a copy.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from proc_memory import resident_mb


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(work):
    wall, cpu = time.perf_counter(), time.process_time()
    found = work()
    return found, time.perf_counter() - wall, time.process_time() - cpu


def _report(sessions, world: dict):
    from storage.services import agreement, agreement_judge_store, human_baseline

    judges = agreement_judge_store.kept_patterns(sessions, world["version_id"],
                                                 world["dataset_id"])
    report = agreement.agreement_report(sessions, world["version_id"], world["dataset_id"],
                                        judges=judges)
    return report, human_baseline.report_baseline(report)


def _sql_floor(sessions, world: dict) -> float:
    """Seconds of the database's plain read of every judge verdict of the set's runs."""
    from sqlalchemy import select

    from storage import models as m

    with sessions() as session:
        wall = time.perf_counter()
        rows = session.execute(
            select(m.GradeRow.response_id, m.GradeCriterionRow.criterion_id,
                   m.GradeCriterionRow.verdict)
            .join(m.GradeRow, m.GradeRow.id == m.GradeCriterionRow.grade_id)
            .join(m.RunRow, m.RunRow.id == m.GradeRow.run_id)
            .where(m.RunRow.dataset_id == world["dataset_id"],
                   m.RunRow.rubric_version_id == world["version_id"])).all()
        seconds = time.perf_counter() - wall
    del rows
    return seconds


def child(url: str, world_file: str, case: str, verdict_number: int) -> dict:
    from storage.engine import open_database
    from storage.services import reviews, trust_report
    from storage.services.reviewers import local_actor

    world = json.loads(Path(world_file).read_text())
    sessions = open_database(url, migrate=False)
    report, baseline = _report(sessions, world)
    kept = getattr(trust_report, "judges_part", None)
    found: dict = {"case": case}
    part = None
    if case == "after":
        if kept is not None:
            part = kept(sessions, report)
            trust_report.build_trust(sessions, report, baseline, judges=part)
        else:  # before issue 41's keeping: the page built the whole report again
            trust_report.build_trust(sessions, report, baseline)
        # a verdict nobody gave before on this response and criterion (each case its own)
        reviews.set_human_verdict(
            sessions, actor=local_actor("Trust benchmark reviewer"),
            response_id=world["reviewed"][verdict_number % len(world["reviewed"])],
            criterion_id=world["criterion_ids"][1],
            verdict=("MET", "UNMET", "CANNOT_ASSESS")[verdict_number % 3])
        report, baseline = _report(sessions, world)
    found["rss_before_mb"], found["peak_before_mb"] = resident_mb(), _peak_mb()
    if part is not None:
        trust, found["wall"], found["cpu"] = _timed(
            lambda: trust_report.build_trust(sessions, report, baseline, judges=part))
    else:
        trust, found["wall"], found["cpu"] = _timed(
            lambda: trust_report.build_trust(sessions, report, baseline))
    found["peak_after_mb"] = _peak_mb()
    if part is not None:
        found["same_as_fresh"] = trust == trust_report.build_trust(sessions, report, baseline)
    found["sql"] = _sql_floor(sessions, world)
    sessions.kw["bind"].dispose()
    return found


FLOAT = r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+"


def compare_reprs(mine: str, theirs: str) -> str:
    """"identical"; or, when only floats differ (the product by parts adds the bootstrap's
    sums in another order), the largest difference relative to the float's size; or
    "different"."""
    import re

    if mine == theirs:
        return "identical"
    if re.sub(FLOAT, "#", mine) != re.sub(FLOAT, "#", theirs):
        return "different (not only in floats)"
    worst = max((abs(float(a) - float(b)) / max(abs(float(a)), abs(float(b)), 1e-300)
                 for a, b in zip(re.findall(FLOAT, mine), re.findall(FLOAT, theirs),
                                 strict=True) if a != b), default=0.0)
    return f"the same but for floats' last bits (largest relative difference {worst:.1e})"


def same_as_reference(url: str, world_file: str, tree: str) -> str:
    """The trust report's repr by this tree's code and by ``tree``'s, each in a fresh
    process with its own ``sys.path``, compared (``compare_reprs``)."""
    found = []
    for root in (str(Path(__file__).resolve().parent.parent), tree):
        done = subprocess.run(
            [sys.executable, "-c", REPR_CHILD, root, url, world_file],
            capture_output=True, text=True, check=False, cwd="/")
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return "not compared (a build failed)"
        found.append(done.stdout)
    return compare_reprs(*found)


REPR_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from storage.engine import open_database
from storage.services import agreement, agreement_judge_store, human_baseline, trust_report
world = json.load(open(sys.argv[3]))
sessions = open_database(sys.argv[2], migrate=False)
judges = agreement_judge_store.kept_patterns(sessions, world["version_id"], world["dataset_id"])
report = agreement.agreement_report(sessions, world["version_id"], world["dataset_id"],
                                    judges=judges)
print(repr(trust_report.build_trust(sessions, report, human_baseline.report_baseline(report))))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True, help="the folder scale.py --keep built")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--db", help="database URL (default: the kept SQLite file)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each case")
    parser.add_argument("--reference-tree", metavar="DIR",
                        help="a source tree whose trust report to compare figure for figure")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--verdict-number", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    kept = Path(args.keep)
    url = args.db or f"sqlite:///{kept / f'scale-{args.size}.db'}"
    dialect = url.split(":", 1)[0].split("+", 1)[0]
    dialect = "postgresql" if dialect.startswith("postgres") else dialect
    world_file = str(kept / f"world-{dialect}-{args.size}.json")
    if args.child is not None:
        print(json.dumps(child(url, world_file, args.child, args.verdict_number)))
        return 0
    rows = []
    number = int(time.time()) % 1000
    for case in ("cold", "after"):
        for _ in range(args.repeat):
            number += 1
            done = subprocess.run(
                [sys.executable, __file__, "--keep", args.keep, "--size", str(args.size),
                 "--child", case, "--verdict-number", str(number),
                 *(["--db", args.db] if args.db else [])],
                capture_output=True, text=True, check=False)
            if done.returncode:
                print(done.stderr, file=sys.stderr)
                return done.returncode
            found = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append(found)
            print(json.dumps(found), flush=True)
    print(f"\ntrust report, {args.size:,} responses ({dialect}):\n")
    print("| case | wall (s) | CPU (s) | RSS before (MB) | peak before (MB) | peak after (MB) "
          "| SQL read of every judge verdict (s) | same as a fresh build |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['case']} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['rss_before_mb']:.0f} "
              f"| {r['peak_before_mb']:.0f} | {r['peak_after_mb']:.0f} | {r['sql']:.2f} "
              f"| {r.get('same_as_fresh', '—')} |")
    if args.reference_tree:
        print(f"\nthe trust report against {args.reference_tree}'s: "
              f"{same_as_reference(url, world_file, args.reference_tree)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
