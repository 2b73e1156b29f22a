"""The Agreement page in a new process right after a grade lands (issue 41: memory flat in N),
this tree beside a reference tree, in turns, in the same run.

For each round and each tree (this one, then ``--reference-tree``): a copy of the kept world
(``scale.py --keep DIR``), 60 of the last run's grades made transient failures
(``judges_advance.py --setup 60``), the page opened once (its kept rows stored, as the app
would have), one failure graded again (``judges_advance.py --land``: a grade lands), then the
page timed with every tab (``agreement_page_cold.py``). Prints per tree the page's peak RSS,
its every-tab seconds and its trust tab's, each round, then the medians side by side.

    .venv/bin/python benchmarks/page_after_grade.py --keep /work/bench/w100 \\
        --reference-tree /tmp/base --rounds 2

The reference tree is a source tree of the project (``git worktree add /tmp/base <commit>``);
both run with this tree's virtualenv. SQLite worlds only (the copy is a file copy).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def _run(tree: Path, script: str, *args: str) -> str:
    done = subprocess.run([PYTHON, f"benchmarks/{script}", *args], cwd=tree, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1]


def one_round(tree: Path, world: Path, version: int, dataset: int, folder: Path) -> dict:
    copy = folder / "world.db"
    shutil.copyfile(world, copy)
    where = ["--db", f"sqlite:///{copy}", "--version", str(version), "--dataset", str(dataset)]
    _run(tree, "judges_advance.py", *where, "--setup", "60")
    _run(tree, "agreement_page_cold.py", *where)  # stores the kept rows, as the app would
    _run(tree, "judges_advance.py", *where, "--land")
    page = json.loads(_run(tree, "agreement_page_cold.py", *where))
    copy.unlink()
    return {"peak_mb": round(page["peak_mb"]), "every_tab_s": round(page["every_tab_seconds"], 2),
            "trust_s": page["parts"].get("tab Trust a judge: trust")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True, help="the folder scale.py --keep built")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--reference-tree", required=True, metavar="DIR")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    kept = Path(args.keep)
    world = kept / f"scale-{args.size}.db"
    ids = json.loads((kept / f"world-sqlite-{args.size}.json").read_text())
    trees = {"this tree": HERE, "reference": Path(args.reference_tree).resolve()}
    found: dict[str, list[dict]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(dir=kept) as folder:
        for number in range(args.rounds):
            for name, tree in trees.items():
                result = one_round(tree, world, ids["version_id"], ids["dataset_id"],
                                   Path(folder))
                found[name].append(result)
                print(f"round {number + 1}, {name}: {json.dumps(result)}", flush=True)
    print(f"\nthe Agreement page after a grade lands, {args.size:,} responses (SQLite), "
          f"medians of {args.rounds} rounds:\n")
    print("| tree | peak RSS (MB) | every tab (s) | trust tab (s) |\n|---|---:|---:|---:|")
    for name, results in found.items():
        print(f"| {name} | " + " | ".join(
            f"{statistics.median(r[key] for r in results):.{0 if key == 'peak_mb' else 2}f}"
            for key in ("peak_mb", "every_tab_s", "trust_s")) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
