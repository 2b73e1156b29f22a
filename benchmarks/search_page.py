"""The Results page's first page with a text search, on a built 100,000-response world.

Times ``results.results_page`` (50 rows, histograms, runs 1-3 of dataset 1 under rubric
version 1, as scale.py builds them) with ``ResultsFilter(search=NEEDLE)``: cold (each needle
in a new process: nothing cached, engine and imports paid before the clock starts), warm
(the same needle again in that process) and after ONE new verdict (which moves the page's
cache stamp). The grades' facts (failures, disagreements) are read first and passed in, as
the page's cache (ui/results_readers.get_grade_facts, kept until a grade is stored) does;
their own time is printed apart. Beside it, in the same process, the straight SQL count of
the matches with the plain ILIKE over the three columns (what the search was before the
index) and the page without a search.

    .venv/bin/python benchmarks/search_page.py --db sqlite:////path/world.db
    .venv/bin/python benchmarks/search_page.py --db postgresql+psycopg://.../db --verdict

The database must have been built by scale.py (or be a copy of one): ids 1 as above.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import func, or_, select

from storage import models as m
from storage.engine import open_database
from storage.repositories.results import _escape_like
from storage.services import results, reviews
from storage.services.reviewers import local_actor

NEEDLES = ["zzzq", "question 4242", "dose", "r4", ""]
PAGE = {"dataset_id": 1, "rubric_version_id": 1, "run_ids": [1, 2, 3], "limit": 50,
        "distribution_bins": 10}


def _page(sessions, needle: str, facts) -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), time.process_time()
    page = results.results_page(sessions, **PAGE, filters=results.ResultsFilter(search=needle),
                                facts=facts)
    return time.perf_counter() - wall, time.process_time() - cpu, page.total


def _scan_count(sessions, needle: str) -> tuple[float, int]:
    """The matches as the search read them before the index: ILIKE over every response."""
    pattern = f"%{_escape_like(needle.strip())}%"
    r = m.ResponseRow
    query = select(func.count()).where(r.dataset_id == 1, or_(
        *[c.ilike(pattern, escape="\\") for c in (r.external_id, r.query, r.output)]))
    start = time.perf_counter()
    with sessions() as session:
        n = session.scalar(query)
    return time.perf_counter() - start, n


def child(url: str, needle: str, verdict: bool) -> dict:
    sessions = open_database(url, migrate=False)
    with sessions() as session:  # the connection made, outside the clock
        session.scalar(select(1))
    # The grades' failures and disagreements, as the page's cache holds them (ui: cached
    # until a grade is stored, so a new verdict keeps them): timed apart, outside the page.
    start = time.perf_counter()
    facts = results.grade_facts(sessions, dataset_id=1, rubric_version_id=1, run_ids=[1, 2, 3],
                                with_scores=False)
    found: dict = {"facts": time.perf_counter() - start}
    found["cold"] = _page(sessions, needle, facts)
    found["warm"] = _page(sessions, needle, facts)
    if verdict:
        reviews.set_human_verdict(sessions, actor=local_actor("bo"), response_id=3,
                                  criterion_id=1, verdict="CANNOT_ASSESS" if os.getpid() % 2
                                  else "MET")
        found["verdict"] = _page(sessions, needle, facts)
    found["scan"] = _scan_count(sessions, needle)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--needles", default=",".join(NEEDLES[:-1]) + ",")
    parser.add_argument("--verdict", action="store_true", help="also after one new verdict")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.db, args.child, args.verdict)))
        return 0
    print(f"load {Path('/proc/loadavg').read_text().split()[:3]}")
    print(f"{'needle':16} {'matches':>8} {'cold s':>7} {'cpu':>5} {'warm s':>7} "
          f"{'verdict s':>9} {'SQL scan count s':>16} {'facts s':>7}")
    for needle in args.needles.split(","):
        run = subprocess.run([sys.executable, __file__, "--db", args.db, "--child", needle]
                             + (["--verdict"] if args.verdict else []),
                             capture_output=True, text=True, check=True)
        f = json.loads(run.stdout.strip().splitlines()[-1])
        after = f"{f['verdict'][0]:9.3f}" if "verdict" in f else f"{'-':>9}"
        assert f["scan"][1] == f["cold"][2] or not needle.strip(), (needle, f)
        print(f"{needle or '(none)':16} {f['cold'][2]:8d} {f['cold'][0]:7.3f} "
              f"{f['cold'][1]:5.2f} {f['warm'][0]:7.3f} {after} {f['scan'][0]:16.3f} "
              f"{f['facts']:7.3f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
