"""Peak memory of ``rubric-workbench grade``'s work that grows with the rows, at two sizes.

For each size N, a JSONL file of N responses is written, then a fresh child process runs
what ``grade`` does before and around the judge calls, in order, printing its peak RSS
after each step (the peak only grows, so each figure includes the steps before it):

- ``read``: the inputs checked and counted, the file fingerprinted (``_read_inputs``);
- ``import``: the rubric and the responses stored (``_rubric_version``, ``_dataset``);
- ``run``: the run created with its N responses (``_runs_for`` -> ``runs.create_run``);
- ``plan``: the runner's first pass planned (the pending responses, cut in chunks);
- ``grades``: a grade stored for every response (``runs.record_grade``, a batch at a time,
  no LLM: the calls themselves hold one batch of responses at a time);
- ``export``: the ``--out`` file written (``exports.write_results``).

Measured here (2-core machine, SQLite): 20k vs 200k rows, peak RSS after the export,
181 vs 1,087 MB before (the run's ids as one statement's parameters: +193 MB; the export
loading every grade: +906 MB; the ids remembered by the read: +31 MB), 81 vs 81 MB after;
100k vs 1M rows up to the planning (--skip-grades), 80 vs 82 MB after.

    .venv/bin/python benchmarks/grade_memory.py                        # 100k and 1M rows
    .venv/bin/python benchmarks/grade_memory.py --rows 20000 200000 --skip-grades
    .venv/bin/python benchmarks/grade_memory.py --rows 20000 200000 --code /tmp/before
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from import_memory import ROOT, write_file

RUBRIC = """\
name: Dosing
criteria:
  - name: accurate
    requirement: States the dose correctly
    weight: 10
  - name: cites
    requirement: Cites a source
    weight: 5
"""

CHILD = """
import argparse, resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from storage.engine import open_database
from storage.migrate import upgrade_to_head
from storage.jobs import grade_inputs
rubric_path, path, url, out, skip_grades = sys.argv[1:6]
upgrade_to_head(url)
sessions = open_database(url)
clock = time.perf_counter()

def step(name):
    global clock
    now = time.perf_counter()
    print(name, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, round(now - clock, 1),
          flush=True)
    clock = now

step("start")
args = argparse.Namespace(rubric=rubric_path, responses=path, max_file_mb=100000,
                          text_column=None, query_column=None, id_column=None,
                          thinking_column=None, reference_column=None,
                          grader=["per-criterion"],
                          model=["openai/bench-judge"], name="")
rubric, mapping, count, print_ = grade_inputs.read_inputs(args)
step("read")
version_id = grade_inputs.rubric_version(sessions, Path(rubric_path).stem, rubric)
dataset_id = grade_inputs.import_dataset(sessions, Path(path), mapping, print_)
step("import")
[run_id], _ = grade_inputs.runs_for(sessions, args, version_id, dataset_id, {{}})
step("run")
from storage.jobs import chunks
from storage.services import runs
if hasattr(chunks, "plan_pending"):  # what the runner does
    chunks.plan_pending(sessions, run_id, 1)
else:  # the code before it: the pending ids as one list
    pending = runs.pending_response_ids(sessions, run_id)
    chunks.plan_pass(sessions, run_id, 1, pending)
    del pending
step("plan")
if skip_grades == "0":
    from grading.types import Criterion, ScoringSettings, Verdict
    from sqlalchemy import select
    from storage import models as m
    from storage.services.grade_records import NewGrade
    from tests.storage.helpers import judge_report
    criteria = [Criterion(name="accurate", requirement="States the dose correctly",
                          weight=10),
                Criterion(name="cites", requirement="Cites a source", weight=5)]
    report = judge_report(criteria, [Verdict.MET, Verdict.UNMET], ScoringSettings(), "x")
    last = 0
    while True:
        with sessions() as session:
            page = list(session.scalars(select(m.ResponseRow.id).where(
                m.ResponseRow.dataset_id == dataset_id, m.ResponseRow.id > last)
                .order_by(m.ResponseRow.id).limit(500)))
        if not page:
            break
        last = page[-1]
        runs.record_grades(sessions, run_id, [NewGrade(rid, report, 0.1) for rid in page])
    step("grades")
    from storage.exports import write_results
    with open(out, "w", encoding="utf-8") as target:
        write_results(sessions, [run_id], target, "jsonl")
    step("export")
"""


def measure(rows: int, workdir: Path, skip_grades: bool, root: Path = ROOT
            ) -> list[tuple[str, float, float]]:
    path = workdir / f"responses-{rows}.jsonl"
    write_file(path, rows, "jsonl")
    rubric = workdir / "dosing.yaml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    url = f"sqlite:///{workdir / f'grade-{rows}.db'}"
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(root=str(root)), str(rubric), str(path), url,
         str(workdir / f"out-{rows}.jsonl"), "1" if skip_grades else "0"],
        capture_output=True, text=True, cwd=root)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    path.unlink()
    found = []
    for line in done.stdout.splitlines():
        name, rss, seconds = line.split()
        found.append((name, int(rss) / 1024, float(seconds)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs=2, default=[100_000, 1_000_000])
    parser.add_argument("--skip-grades", action="store_true",
                        help="stop after planning (no grades stored, no export)")
    parser.add_argument("--code", type=Path, default=ROOT, metavar="DIR",
                        help="measure the code checked out in DIR (e.g. before a change: "
                             "git archive COMMIT | tar -x -C DIR)")
    args = parser.parse_args()
    small, large = args.rows
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        a = measure(small, Path(tmp), args.skip_grades, args.code)
        b = measure(large, Path(tmp), args.skip_grades, args.code)
    print(f"{args.code}: peak RSS (MB) after each step of grade, {small:,} vs {large:,} rows "
          f"({time.perf_counter() - started:.0f} s in all)")
    print(f"{'step':>8} {f'{small:,} rows':>14} {f'{large:,} rows':>14} {'growth':>8} "
          f"{'s (small)':>10} {'s (large)':>10}")
    for (name, rss_a, s_a), (_n, rss_b, s_b) in zip(a, b, strict=True):
        print(f"{name:>8} {rss_a:>14,.0f} {rss_b:>14,.0f} {rss_b - rss_a:>+8,.0f} "
              f"{s_a:>10.1f} {s_b:>10.1f}")


if __name__ == "__main__":
    main()
