"""The human baseline after one saved verdict, its criterion rows kept by their inputs
(``baseline_rows.RowMemo``, as the Agreement page reads it) beside every row computed
(the reference), in turns in the same process, on a copy of a world ``scale.py --keep``
built (issue 41: the page's 0.5 s after a verdict).

    .venv/bin/python benchmarks/baseline_after_verdict.py --keep /work/bench/w100 --size 100000

Each round saves one verdict (a reviewer changes one criterion of a reviewed response),
patches the kept report as the page does, then times the baseline with the rows kept and
without, in alternating order. Prints the medians and whether both give the same figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True, help="the folder scale.py --keep built")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()

    import scale

    from storage.engine import open_database
    from storage.services import (
        agreement_inputs_store,
        agreement_judge_counts,
        agreement_kept,
        baseline_rows,
        human_baseline,
        reviews,
    )

    kept = Path(args.keep)
    world = scale.World(**json.loads(
        (kept / f"world-sqlite-{args.size}.json").read_text()))
    with tempfile.TemporaryDirectory() as tmp:  # the rounds save verdicts: on a copy
        copy = Path(tmp) / f"scale-{args.size}.db"
        shutil.copy(kept / f"scale-{args.size}.db", copy)
        sessions = open_database(f"sqlite:///{copy}", migrate=False)
        judges = agreement_judge_counts.judge_patterns(sessions, world.version_id,
                                                       world.dataset_id)
        inputs = agreement_inputs_store.kept_inputs(sessions, world.version_id,
                                                    world.dataset_id, lambda: judges)
        slot = agreement_kept.KeptSlot()
        memo = baseline_rows.RowMemo()

        def report():
            return slot.report(sessions, world.version_id, world.dataset_id,
                               inputs if inputs is not None else judges, lambda: judges)

        now = report()
        human_baseline.report_baseline(now, memo)  # the page as it opened
        timed: dict[str, list[float]] = {"rows kept (the page)": [], "every row (reference)": []}
        same = True
        reviewer = scale.REVIEWERS[1]
        for n in range(args.rounds):
            key = (world.reviewed[n], world.criterion_ids[n % len(world.criterion_ids)])
            was = now.data.reviewer_verdicts.get(reviewer.key, {}).get(key)
            reviews.set_human_verdict(  # a verdict other than the one given: a real change
                sessions, actor=reviewer, response_id=key[0], criterion_id=key[1],
                verdict=next(v for v in ("UNMET", "MET", "CANNOT_ASSESS") if v != was))
            now = report()
            ways = [("rows kept (the page)", memo), ("every row (reference)", None)]
            found = {}
            for name, rows in (ways if n % 2 == 0 else ways[::-1]):
                gc.collect()
                started = time.perf_counter()
                found[name] = human_baseline.report_baseline(now, rows)
                timed[name].append(time.perf_counter() - started)
            same = same and len(set(map(repr, found.values()))) == 1
        sessions.kw["bind"].dispose()
    for name, seconds in timed.items():
        print(f"{name}: median {statistics.median(seconds):.3f} s over {len(seconds)} "
              f"verdicts (min {min(seconds):.3f}, max {max(seconds):.3f})")
    print(f"rows computed with the memo: {memo.made}; the same figures: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
