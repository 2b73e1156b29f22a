"""Peak memory of importing a responses file: does it stay flat as the rows grow?

Writes a JSONL (or CSV) file of N responses (id, query, text of ~200 characters, a metadata
column), then imports it into a fresh SQLite database in a child process and prints the
child's peak RSS. Each size runs two ways in the same run:

- ``stream``: what the CLI does (``iter_responses`` over the file, stored a batch at a time
  by ``datasets.create_dataset`` in one transaction);
- ``whole`` (the reference, the way every import worked before): the file read into memory,
  parsed to a list of responses, then stored.

Also printed: the peak RSS of a child that only imports the modules (the floor). With
``--before DIR`` (a checkout of the code before streaming, e.g. ``git worktree add DIR
<commit>``), the ``before`` mode runs that code's import (read, parse and insert all at once).

    .venv/bin/python benchmarks/import_memory.py                      # 100k and 1M rows
    .venv/bin/python benchmarks/import_memory.py --rows 10000 100000 --format csv
    .venv/bin/python benchmarks/import_memory.py --skip-whole-above 100000
    .venv/bin/python benchmarks/import_memory.py --rows 100000 --before /tmp/old-checkout
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = ("The recommended dose is 5 mg twice a day; see the leaflet, section 4.2, and ask a "
        "pharmacist if another medicine is taken at the same time. ") * 2


def write_file(path: Path, rows: int, fmt: str) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        if fmt == "csv":
            writer = csv.writer(handle)
            writer.writerow(["id", "query", "text", "model"])
            for i in range(rows):
                writer.writerow([f"r{i}", f"question {i}?", f"{i}: {TEXT}", "judge-a"])
        else:
            for i in range(rows):
                handle.write(json.dumps({"id": f"r{i}", "query": f"question {i}?",
                                         "text": f"{i}: {TEXT}", "model": "judge-a"}) + "\n")


CHILD = """
import resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from storage.engine import open_database
from storage.migrate import upgrade_to_head
from storage.response_files import read_responses
from storage.services import datasets
mode, path, url = sys.argv[1:4]
kw = {{}}
if "actor" in __import__("inspect").signature(datasets.create_dataset).parameters:
    from storage.services.reviewers import command_line_actor
    kw["actor"] = command_line_actor()
upgrade_to_head(url)
sessions = open_database(url)
started = time.perf_counter()
if mode == "stream":
    from storage.response_files import iter_responses
    info = datasets.create_dataset(sessions, "bench", responses=iter_responses(Path(path)), **kw)
elif mode in ("whole", "before"):
    data = open(path, "rb").read()
    info = datasets.create_dataset(sessions, "bench", responses=read_responses(data, path), **kw)
else:
    info = None
elapsed = time.perf_counter() - started
rows = info.response_count if info else 0
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rows, elapsed)
"""


def measure(mode: str, path: Path, workdir: Path, root: Path = ROOT
            ) -> tuple[float, int, float]:
    """(peak RSS in MB, rows stored, seconds) of one import in a fresh process."""
    url = f"sqlite:///{workdir / f'{mode}-{path.stem}.db'}"
    out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(root)), mode, str(path),
                          url], capture_output=True, text=True, check=True,
                         cwd=root).stdout.split()
    return int(out[0]) / 1024, int(out[1]), float(out[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    parser.add_argument("--skip-stream", action="store_true",
                        help="run only the reference modes (stream figures measured already)")
    parser.add_argument("--before", type=Path, default=None, metavar="DIR",
                        help="also run the import of the code checked out in DIR")
    parser.add_argument("--skip-whole-above", type=int, default=None,
                        help="do not run the reference above this many rows (it needs GBs)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        floor, _, _ = measure("none", workdir / "none.jsonl", workdir)
        print(f"modules only: peak RSS {floor:,.0f} MB")
        print(f"{'rows':>10} {'file MB':>8} {'mode':>7} {'peak RSS MB':>12} "
              f"{'above floor':>12} {'seconds':>8}")
        for rows in args.rows:
            path = workdir / f"responses-{rows}.{args.format}"
            started = time.perf_counter()
            write_file(path, rows, args.format)
            size = path.stat().st_size / 1024 / 1024
            print(f"  (wrote {path.name} in {time.perf_counter() - started:.0f} s)",
                  file=sys.stderr)
            modes = [] if args.skip_stream else ["stream"]
            if args.skip_whole_above is None or rows <= args.skip_whole_above:
                modes.append("whole")
            if args.before is not None:
                modes.append("before")
            for mode in modes:
                root = args.before if mode == "before" else ROOT
                peak, stored, seconds = measure(mode, path, workdir, root)
                assert stored == rows, (mode, stored, rows)
                print(f"{rows:>10,} {size:>8,.0f} {mode:>7} {peak:>12,.0f} "
                      f"{peak - floor:>12,.0f} {seconds:>8.1f}", flush=True)
            path.unlink()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"(children's CPU time {usage.ru_utime + usage.ru_stime:.0f} s)")


if __name__ == "__main__":
    main()
