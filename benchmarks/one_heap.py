"""The Agreement page's readers on threads, with and without ``grading.memory.one_heap``
(issue 41): what keeping the app's threads on one heap changes in the process's memory.

The app's server runs each page's script on a thread of its own; glibc gives a new thread a
heap (an arena) of its own. This runs the page's readers (``ui.agreement_readers``) in one
process, each page on a new thread one after the other as the server does, the heap trimmed
after each as the page does: the report, the human baseline, the trust report; then a grade
lands (``judges_advance.py --land``) and the three again. Each variant in a process of its
own on a fresh copy of the prepared world, in turns: ``one heap`` calls ``one_heap()`` first,
``default arenas`` does not. Prints the resident and peak MB after each page, per variant,
medians of the rounds, side by side.

    .venv/bin/python benchmarks/one_heap.py --keep /work/bench/w100 --rounds 2

The world is the one ``scale.py --keep DIR`` built (SQLite); it is prepared once on a copy
as ``page_after_grade.py`` does: 60 of the last run's grades made transient failures and the
page opened once (its kept rows stored).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from proc_memory import memory_mb

HERE = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
STEPS = ("report", "baseline", "trust")


def _run(script: str, *args: str) -> str:
    done = subprocess.run([PYTHON, f"benchmarks/{script}", *args], cwd=HERE, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def _memory() -> tuple[int, int]:
    resident, peak = memory_mb()
    return round(resident), round(peak)


def child(db: str, version: int, dataset: int, one: bool) -> dict:
    """The pages on threads in this process; resident and peak MB after each."""
    import logging

    sys.path.insert(0, str(HERE))
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from grading.memory import give_back, one_heap

    took = one_heap() if one else None
    from storage.services import blindness
    from ui import agreement_readers as readers
    from ui.runtime import sessions_for

    sessions_for(db)

    def page(step: str) -> None:
        def run():
            readers.get_stamp.clear()  # as 5 s later: the page reads the stamp again
            scope = (db, version, dataset, readers.get_stamp(db, version, dataset),
                     blindness.EVERYTHING)
            getattr(readers, f"get_{step}")(*scope)
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        give_back()

    found: dict[str, tuple[int, int]] = {}
    for step in STEPS:
        page(step)
        found[step] = _memory()
    _run("judges_advance.py", "--db", db, "--version", str(version), "--dataset",
         str(dataset), "--land")
    for step in STEPS:
        page(step)
        found[f"{step} after a grade"] = _memory()
    return {"one_heap": took, "after": found}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", help="the folder scale.py --keep built")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", nargs=4, metavar=("DB", "VERSION", "DATASET", "ONE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        db, version, dataset, one = args.child
        print(json.dumps(child(db, int(version), int(dataset), one == "1")))
        return 0
    if not args.keep:
        parser.error("--keep DIR: the folder scale.py --keep built")
    kept = Path(args.keep)
    ids = json.loads((kept / f"world-sqlite-{args.size}.json").read_text())
    where = ["--version", str(ids["version_id"]), "--dataset", str(ids["dataset_id"])]
    variants = {"default arenas": "0", "one heap": "1"}
    found: dict[str, list[dict]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(dir=kept) as folder:
        prepared = Path(folder) / "prepared.db"
        shutil.copyfile(kept / f"scale-{args.size}.db", prepared)
        _run("judges_advance.py", "--db", f"sqlite:///{prepared}", *where, "--setup", "60")
        _run("agreement_page_cold.py", "--db", f"sqlite:///{prepared}", *where)
        for number in range(args.rounds):
            for name, one in variants.items():
                copy = Path(folder) / "round.db"
                shutil.copyfile(prepared, copy)
                result = json.loads(_run("one_heap.py", "--child", f"sqlite:///{copy}",
                                         where[1], where[3], one).splitlines()[-1])
                copy.unlink()
                found[name].append(result["after"])
                print(f"round {number + 1}, {name}: {json.dumps(result)}", flush=True)
    print(f"\nthe Agreement readers on threads, {args.size:,} responses (SQLite), resident / "
          f"peak MB after each page, medians of {args.rounds} rounds in turns:\n")
    print("| page | " + " | ".join(variants) + " |\n|---|" + "---:|" * len(variants))
    for step in found["one heap"][0]:
        cells = []
        for name in variants:
            resident = statistics.median(r[step][0] for r in found[name])
            peak = statistics.median(r[step][1] for r in found[name])
            cells.append(f"{resident:.0f} / {peak:.0f}")
        print(f"| {step} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
