"""How long ``import-verdicts`` takes, how long it holds SQLite's write lock, and its memory.

Builds a fresh SQLite database (a rubric of 5 criteria, a dataset of ROWS / 10 responses, one
verdict each by the two known reviewers ``ana`` and ``bo``), writes a verdict sheet of ROWS
rows (every response x criterion for both reviewers, with a note), then runs
``rubric-workbench import-verdicts`` on it in a child process while a probe in this process
tries to take the write lock (``BEGIN IMMEDIATE``) every 50 ms: the longest the probe waited
is how long another writer (a reviewer saving a verdict, a grading worker) was kept out.
Prints the child's wall and CPU time (the whole command: start-up, reading, checking,
writing), its peak RSS and the probe's longest wait. On a shared machine the wall figures
follow the load; the CPU time much less.

    .venv/bin/python benchmarks/verdict_import.py                    # 50,000 rows
    .venv/bin/python benchmarks/verdict_import.py --rows 200000
    .venv/bin/python benchmarks/verdict_import.py --code /tmp/old-checkout   # the code before

With ``--code DIR`` the import runs the code of another checkout (e.g. ``git worktree add
DIR <commit>``) on the same database and sheet. Not a test: it prints what it measures.

The issue's attack (issue 40 item 14) measured the first version at 75 s for 50,000 rows and
over 300 s for 200,000, holding SQLite's write lock throughout and printing every reviewer.
Measured on a shared 2-core machine under a load average of 13-21 (so walls are long and
vary with the load; the CPU times are the steadier figure), one run each:

    rows     code                          wall     CPU     peak RSS  longest lock wait
    50,000   before (a query per row)      1633 s   151 s   128 MB    1595 s
    50,000   batched (ORM bulk insert)       70 s   5.1 s   107 MB      23 s
    50,000   batched (Core insert)           82 s   4.1 s   103 MB      31 s
    200,000  batched (Core insert)           63 s  10.7 s   165 MB      29 s

The same again (load average ~13), the rows kept in a list ("listed") against the streamed
import (checked rows parked in a temporary file, duplicates in a compact index; "streamed").
The peak RSS includes ~85 MB of the command's own start-up (SQLAlchemy, the app's modules):

    rows     code                          wall     CPU     peak RSS  longest lock wait
    50,000   listed                          87 s   4.7 s   103 MB      39 s
    200,000  listed                         140 s  12.7 s   166 MB      55 s
    50,000   streamed                        86 s   5.2 s    89 MB      19 s
    200,000  streamed                       193 s  14.3 s    97 MB      62 s
    50,000   streamed (a quieter moment)    7.2 s   5.0 s    88 MB     3.5 s

Streaming costs ~10 % more CPU (pickling the parked rows, one read of current verdicts per
batch) and keeps memory flat: +8 MB from 50,000 to 200,000 rows where the list took +63 MB.
The write lock is held for the inserts alone in both; its longest wait follows the load.
"""

from __future__ import annotations

import argparse
import csv
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = """
import resource, sys, time
from storage.cli import main
start = time.perf_counter()
code = main(sys.argv[1:])
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
print(f"CHILD wall={wall:.2f}s cpu={usage.ru_utime + usage.ru_stime:.2f}s "
      f"peak_mb={usage.ru_maxrss / 1024:.0f} exit={code}", file=sys.stderr)
"""


def seed(url: str, responses: int) -> None:
    from grading.types import Criterion
    from storage.engine import open_database
    from storage.services import datasets, reviews, rubrics
    from storage.services.reviewers import local_actor

    admin = local_actor("admin")
    sessions = open_database(url)
    criteria = [Criterion(name=f"c{i}", requirement=f"Requirement {i}", weight=1.0)
                for i in range(5)]
    version = rubrics.create_rubric(sessions, "Bench", criteria, actor=admin)
    dataset = datasets.create_dataset(sessions, "Sheet", responses=[
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(responses)], actor=admin)
    first = datasets.list_responses(sessions, dataset.id, limit=1)[0]
    for who in ("ana", "bo"):  # the two reviewers are known people
        reviews.set_human_verdict(sessions, actor=local_actor(who), response_id=first.id,
                                  criterion_id=version.criteria[0].id, verdict="MET")
    sessions.kw["bind"].dispose()


def write_sheet(path: Path, responses: int) -> int:
    count = 0
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["response_id", "criterion", "verdict", "reviewer", "note"])
        for i in range(responses):
            for c in range(5):
                for who in ("ana", "bo"):
                    verdict = "UNMET" if (i + c) % 3 == 0 else "MET"
                    writer.writerow([f"r{i}", f"c{c}", verdict, who, f"note {i}-{c}"])
                    count += 1
    return count


class LockProbe(threading.Thread):
    """Takes and releases SQLite's write lock every 50 ms; remembers the longest wait."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path, self.longest, self.tries = path, 0.0, 0
        self.stop = threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        while not self.stop.is_set():
            start = time.perf_counter()
            while True:  # a busy timeout is not the end of the wait: try again
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError:
                    if self.stop.is_set():
                        return
            self.longest = max(self.longest, time.perf_counter() - start)
            conn.execute("ROLLBACK")
            self.tries += 1
            time.sleep(0.05)
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--code", default=str(ROOT), help="checkout whose import runs")
    args = parser.parse_args()
    responses = max(1, args.rows // 10)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        url = f"sqlite:///{db}"
        seed(url, responses)
        sheet = Path(tmp) / "sheet.csv"
        rows = write_sheet(sheet, responses)
        probe = LockProbe(db)
        probe.start()
        env = {**os.environ, "PYTHONPATH": args.code, "RUBRIC_WORKBENCH_DATA_DIR": tmp}
        done = subprocess.run(
            [sys.executable, "-c", CHILD, "import-verdicts", str(sheet), "--rubric", "Bench",
             "--dataset", "Sheet", "--db", url],
            cwd=args.code, env=env, capture_output=True, text=True)
        probe.stop.set()
        probe.join()
        out = done.stdout.strip().splitlines()
        print(f"code: {args.code}")
        print(f"rows: {rows} ({responses} responses x 5 criteria x 2 reviewers)")
        print("import printed:", *(f"  {line[:200]}" for line in out[-12:]), sep="\n")
        print(f"import printed {len(done.stdout)} characters in {len(out)} lines")
        print(*(line for line in done.stderr.splitlines() if line.startswith(("CHILD", "error"))),
              sep="\n")
        print(f"longest wait of another writer for the lock: {probe.longest:.2f} s "
              f"({probe.tries} probes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
