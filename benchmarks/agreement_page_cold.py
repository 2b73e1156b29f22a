"""The Agreement page's reads, cold, in a NEW process (issue 41): what a new app process
computes before the page shows, through the page's own cached readers (ui.agreement_readers,
ui.panel_readers) for an adjudicator (who sees every verdict).

benchmarks/scale.py runs this file as a child for its row "Agreement page in a new process,
as it opens": the child opens the database (untimed: the app opens it once per process),
then times the page as it opens on its first tab, Criteria — the stamp, the report, the
criteria table and the disagreement list of the first criterion with disagreements, for the
pair the page compares by default (people against the first judge; every source when there
are no people) — and then, apart, what each other tab reads when it is opened: the panel
members' alpha (Judges and cost), the human baseline and its grid, the trust report. It
prints one JSON line: wall and CPU seconds of the page as it opens, each part's wall
seconds, the whole (every tab), the process's own peak RSS (also as it stood after
each part) and what one full pass of the cyclic garbage collector costs in it then, holding
what the page keeps (the report, its baseline, the trust report): a page read in the app may
pay one such pass.

    .venv/bin/python benchmarks/agreement_page_cold.py --db URL --version V --dataset D
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from proc_memory import full_collection, peak_mb


def page_cold(db: str, version_id: int, dataset_id: int) -> dict:
    """The Agreement page as it opens, then each other tab, timed, with the page's readers."""
    from storage.services import blindness
    from storage.services.agreement import HUMAN
    from ui import agreement_criteria, panel_readers
    from ui import agreement_readers as readers
    from ui.runtime import sessions_for

    sessions_for(db)  # the app opens (and migrates) the database once per process
    parts: dict[str, float] = {}
    peaks: dict[str, float] = {}  # the process's peak RSS once each part is done
    started, cpu = time.perf_counter(), time.process_time()

    def part(name: str, fn):
        at = time.perf_counter()
        found = fn()
        parts[name] = round(time.perf_counter() - at, 3)
        peaks[name] = round(peak_mb())
        return found

    scope = (db, version_id, dataset_id,
             part("stamp", lambda: readers.get_stamp(db, version_id, dataset_id)),
             blindness.EVERYTHING)
    report = part("report", lambda: readers.get_report(*scope))
    # the pair the Criteria tab compares by default (ui.agreement_criteria.render_pair_picker)
    a, b = next((pair for pair in report.pairwise if pair[0] == HUMAN), (None, None))
    rows = part("criteria table", lambda: readers.get_criterion_table(*scope, a, b))
    keys = (a, b) if a and b else tuple(s.key for s in report.data.verdict_sources)
    first = next((r.criterion.id for r in rows if r.disagreements), None)
    if first is not None:
        part("disagreement list", lambda: readers.get_disagreements(
            *scope, keys, first, agreement_criteria.LISTED))
    opened, opened_cpu = time.perf_counter() - started, time.process_time() - cpu

    def alphas():
        for judge in report.judges:
            if judge.source.is_panel:
                pid = judge.source.panel_id
                panel_readers.get_member_agreement(  # as ui.agreement_panels reads it
                    db, pid, panel_readers.get_member_stamp(db, (pid,)))
    part("tab Judges and cost: members' alpha", alphas)
    part("tab Human baseline: baseline + grid", lambda: (readers.get_baseline(*scope),
                                                         readers.get_baseline_grid(*scope)))
    part("tab Trust a judge: trust", lambda: readers.get_trust(*scope))
    every_tab, every_tab_cpu = time.perf_counter() - started, time.process_time() - cpu
    collection, objects = full_collection()
    return {"seconds": opened, "cpu": opened_cpu, "parts": parts,
            "every_tab_seconds": every_tab, "every_tab_cpu": every_tab_cpu,
            "peak_mb": peak_mb(), "peak_mb_after": peaks,
            "full_collection_seconds": round(collection, 3), "tracked_objects": objects}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--version", type=int, required=True)
    parser.add_argument("--dataset", type=int, required=True)
    args = parser.parse_args()
    # the caches' "no Streamlit runtime" warnings: the readers run outside the app here
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    print(json.dumps(page_cold(args.db, args.version, args.dataset)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
