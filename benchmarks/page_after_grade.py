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
both run with this tree's virtualenv.

``--db URL`` of a PostgreSQL world (``scale.py --db URL --keep DIR`` built it on a server of
your own): each round's copy is ``CREATE DATABASE ... TEMPLATE`` the world's database (no one
may be connected to it), dropped after.
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


def _copied(world: str, folder: Path):
    """A copy of the world's database: (its URL, a function that removes it)."""
    if not world.startswith("postgresql"):
        copy = folder / "world.db"
        shutil.copyfile(world, copy)
        return f"sqlite:///{copy}", copy.unlink
    from sqlalchemy import create_engine, make_url, text

    url = make_url(world)
    name = f"{url.database}_after_grade"
    server = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")

    def run(statement: str) -> None:
        with server.connect() as connection:
            connection.execute(text(statement))

    run(f'DROP DATABASE IF EXISTS "{name}"')
    run(f'CREATE DATABASE "{name}" TEMPLATE "{url.database}"')
    return (url.set(database=name).render_as_string(hide_password=False),
            lambda: (run(f'DROP DATABASE "{name}"'), server.dispose()))


def one_round(tree: Path, world: str, version: int, dataset: int, folder: Path) -> dict:
    copy, remove = _copied(world, folder)
    where = ["--db", copy, "--version", str(version), "--dataset", str(dataset)]
    _run(tree, "judges_advance.py", *where, "--setup", "60")
    _run(tree, "agreement_page_cold.py", *where)  # stores the kept rows, as the app would
    _run(tree, "judges_advance.py", *where, "--land")
    page = json.loads(_run(tree, "agreement_page_cold.py", *where))
    remove()
    return {"peak_mb": round(page["peak_mb"]), "every_tab_s": round(page["every_tab_seconds"], 2),
            "trust_s": page["parts"].get("tab Trust a judge: trust")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True, help="the folder scale.py --keep built")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--reference-tree", required=True, metavar="DIR")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--db", help="a PostgreSQL world's URL (default: the kept SQLite "
                                     "file)")
    args = parser.parse_args()
    if args.db and not args.db.startswith("postgresql"):
        parser.error("--db is a PostgreSQL world's URL (a SQLite world is the kept file)")
    kept = Path(args.keep)
    world = args.db or str(kept / f"scale-{args.size}.db")
    dialect = "postgresql" if args.db else "sqlite"
    ids = json.loads((kept / f"world-{dialect}-{args.size}.json").read_text())
    trees = {"this tree": HERE, "reference": Path(args.reference_tree).resolve()}
    found: dict[str, list[dict]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(dir=kept) as folder:
        for number in range(args.rounds):
            for name, tree in trees.items():
                result = one_round(tree, world, ids["version_id"], ids["dataset_id"],
                                   Path(folder))
                found[name].append(result)
                print(f"round {number + 1}, {name}: {json.dumps(result)}", flush=True)
    print(f"\nthe Agreement page after a grade lands, {args.size:,} responses ({dialect}), "
          f"medians of {args.rounds} rounds:\n")
    print("| tree | peak RSS (MB) | every tab (s) | trust tab (s) |\n|---|---:|---:|---:|")
    for name, results in found.items():
        print(f"| {name} | " + " | ".join(
            f"{statistics.median(r[key] for r in results):.{0 if key == 'peak_mb' else 2}f}"
            for key in ("peak_mb", "every_tab_s", "trust_s")) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
