"""A kept row's large value written and read back on SQLite (issue 41): through
``storage.big_values`` (blob I/O) beside the plain insert and select it replaced, measured in
the same run, each in its own new process: how far the process's peak resident memory rises
over what it held before (the value itself included), and the time.

    .venv/bin/python benchmarks/kept_blobs.py [--mb 16] [--rounds 3]

The value is the judges' inputs' size at 100,000 responses (16 MB; the people's rows ~9 MB,
the judges' count ~7 MB, the trust share ~5 MB), stored as ``kept_rows.replace`` stores it:
delete the old row, insert the new, in one transaction.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _one(mode: str, step: str, size: int, path: str) -> dict:
    """One step in this new process: ``setup`` (the database, its set and a first row),
    ``write`` (the row replaced) or ``read``, through ``mode``'s way."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from proc_memory import memory_mb
    from sqlalchemy import delete, insert, select

    from grading.types import Criterion
    from storage import big_values
    from storage import models as m
    from storage.engine import open_database
    from storage.services import datasets, rubrics
    from storage.services.reviewers import local_actor

    sessions = open_database(f"sqlite:///{path}", migrate=step == "setup")
    s = m.AgreementPeopleRow
    if step == "setup":
        actor = local_actor("Benchmark")
        rubrics.create_rubric(sessions, "R", [Criterion(requirement="r", weight=1)],
                              actor=actor)
        datasets.create_dataset(sessions, "D", responses=[
            {"id": "r0", "query": "q", "text": "a"}], actor=actor)
    value = bytearray(os.urandom(size))
    where = {"rubric_version_id": 1, "dataset_id": 1}
    before = memory_mb(os.getpid())[0]
    _reset_peak()
    start = time.perf_counter()
    if step in ("setup", "write"):
        with sessions() as session, session.begin():
            session.execute(delete(s).where(s.dataset_id == 1))
            row = {**where, "stamp": step, "figures": "{}", "arrays": value}
            if mode == "big_values":
                big_values.insert_row(session, s, row)
            else:
                session.connection().execute(insert(s), row)
    else:
        with sessions() as session:
            row_id = session.scalar(select(s.id))
            if mode == "big_values":
                read = big_values.read_row(session, s, row_id, (s.figures, s.arrays))
            else:
                read = session.execute(select(s.figures, s.arrays).where(s.id == row_id)).one()
            assert len(read[1]) == size
    return {"s": time.perf_counter() - start, "mb": memory_mb(os.getpid())[1] - before}


def _reset_peak() -> None:
    """The process's peak (VmHWM) set back to what it holds now (Linux: clear_refs 5)."""
    with open(f"/proc/{os.getpid()}/clear_refs", "w") as refs:
        refs.write("5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        mode, step, size, path = args.one
        print(json.dumps(_one(mode, step, int(size), path)))
        return
    size = int(args.mb * (1 << 20))
    runs: dict[str, dict[str, list[dict]]] = {"big_values": {}, "plain": {}}
    for _round in range(args.rounds):
        for mode, found in runs.items():  # in turns
            with tempfile.TemporaryDirectory() as tmp:
                for step in ("setup", "write", "read"):
                    out = subprocess.run(
                        [sys.executable, __file__, "--one", mode, step, str(size),
                         str(Path(tmp) / "kept.db")],
                        check=True, capture_output=True, text=True).stdout
                    found.setdefault(step, []).append(json.loads(out.strip().splitlines()[-1]))
    print(f"a kept row's {args.mb:g} MB value on SQLite, each step in a new process, medians "
          f"of {args.rounds}: the process's peak rise over what it held before (the value "
          "made, 16 MB, is held before):\n")
    print("| | replace: peak rise (MB) | replace (s) | read: peak rise (MB) | read (s) |")
    print("|---|---:|---:|---:|---:|")
    for mode, found in runs.items():
        name = ("storage.big_values (blob I/O)" if mode == "big_values"
                else "plain insert / select (the reference)")
        cells = [statistics.median(f[k] for f in found[step])
                 for step in ("write", "read") for k in ("mb", "s")]
        print(f"| {name} | {cells[0]:.1f} | {cells[1]:.3f} | {cells[2]:.1f} | {cells[3]:.3f} |")


if __name__ == "__main__":
    main()
