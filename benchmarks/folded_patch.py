"""The kept count's patch after a grade lands (``agreement_folded``: each moving row's count
among the units, and the units merged with those that go and come), this tree beside another
tree's, in turns in the same process, on the judges' units of the world ``scale.py --keep``
built (issue 41: the patch lexsorted the ~177,000 units with its rows, twice, at the peak of
the page after a grade).

    git worktree add /tmp/ref <commit>
    .venv/bin/python benchmarks/folded_patch.py --keep /work/bench/w100 --reference-tree /tmp/ref

Prints, for each tree, the median time and the most memory traced (tracemalloc) over the
tally and the merge of 200 units gone and 200 come, and whether both trees give the same.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _module(tree: Path, name: str):
    """``storage/services/agreement_folded.py`` of ``tree`` as a module of its own (what it
    imports comes from this tree's packages)."""
    spec = importlib.util.spec_from_file_location(
        name, tree / "storage" / "services" / "agreement_folded.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def _units(world: Path, version: int, dataset: int):
    from storage.engine import open_database
    from storage.services import agreement_inputs_store, agreement_judge_store
    from storage.services.agreement_judge_counts import judge_stamp
    from storage.services.agreement_sources import data_stamp

    with tempfile.TemporaryDirectory() as tmp:  # the inputs are stored: not in the world
        copy = Path(tmp) / world.name
        shutil.copy(world, copy)
        sessions = open_database(f"sqlite:///{copy}")
        inputs = agreement_inputs_store.kept_inputs(
            sessions, version, dataset,
            lambda: agreement_judge_store.kept_patterns(sessions, version, dataset),
            judge_stamp(data_stamp(sessions, version, dataset)))
        return inputs.folded.units


def _patch(module, units, gone, came, entries):
    import numpy as np

    tracemalloc.start()
    started = time.perf_counter()
    tally = module._tally(units, np.array(entries, dtype=np.int64))
    merged = module._merged(units, gone, came)
    took = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return took, peak, tally, merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True, help="the folder scale.py --keep built")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--reference-tree", required=True, type=Path,
                        help="another source tree of the project (git worktree add DIR <commit>)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import numpy as np

    ids = json.loads((Path(args.keep) / f"world-sqlite-{args.size}.json").read_text())
    units = _units(Path(args.keep) / f"scale-{args.size}.db", ids["version_id"],
                   ids["dataset_id"])
    rng = random.Random(1)
    at = sorted(rng.sample(range(len(units)), 400))
    gone = [tuple(units[i].tolist()) for i in at[:200]]
    came = [(int(units[i, 0]), int(units[i, 1]), int(units[i, 2]) + 1, int(units[i, 3]), 1, 1)
            for i in at[200:]]
    trees = {"this": _module(ROOT, "folded_this"),
             "reference": _module(args.reference_tree, "folded_reference")}
    found: dict[str, list] = {name: [] for name in trees}
    for _round in range(args.rounds):
        for name, module in trees.items():
            found[name].append(_patch(module, units, gone, came, gone + came))
    same = all(np.array_equal(a[2], b[2]) and np.array_equal(a[3], b[3])
               for a, b in zip(found["this"], found["reference"], strict=True))
    print(f"{len(units):,} units, 200 gone and 200 come; medians of {args.rounds} in turns\n")
    print("| tree | tally and merge (ms) | most traced (MB) | result (MB) |\n|---|---:|---:|---:|")
    for name, runs in found.items():
        print(f"| {name} | {statistics.median(r[0] for r in runs) * 1000:.0f} "
              f"| {statistics.median(r[1] for r in runs) / 1e6:.1f} "
              f"| {runs[0][3].nbytes / 1e6:.1f} |")
    print(f"\nthe same tallies and merged units: {same}")


if __name__ == "__main__":
    main()
