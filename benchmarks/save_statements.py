"""How many SQL statements (and how long) one reviewer's save costs, beside the floor.

Seeds the tests' graded world (two runs, four criteria) in a temporary SQLite file, then saves
every criterion of each response through ``reviews.save_review`` (what Review's "Save" calls:
the verdicts, the effective verdicts, people's score and the runs' effective scores, in one
transaction) and counts the statements SQLAlchemy sends. Beside it, in the same run, the floor:
the same verdicts written as one plain ``INSERT`` per criterion with nothing kept up to date.

    .venv/bin/python benchmarks/save_statements.py            # 40 responses
    .venv/bin/python benchmarks/save_statements.py --responses 200
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=40)
    count = parser.parse_args().responses
    folder = tempfile.mkdtemp(prefix="rw-save-bench-")
    os.environ["RUBRIC_WORKBENCH_DATABASE_URL"] = f"sqlite:///{folder}/w.db"
    os.environ["RUBRIC_WORKBENCH_DATA_DIR"] = folder
    from sqlalchemy import event, insert

    from grading.types import Verdict
    from storage import models as m
    from storage.repositories import rubrics as rubric_repo
    from storage.services import reviews
    from tests.actors import ADMIN
    from tests.ui.seed import seed_graded

    seeded = seed_graded(count=count)
    sessions = seeded.sessions
    with sessions() as session:
        criteria = [c.id for c in rubric_repo.criteria_of(session, seeded.version.id)]
    statements = [0]
    event.listen(sessions.kw["bind"], "before_cursor_execute",
                 lambda *_a, **_k: statements.__setitem__(0, statements[0] + 1))

    def measure(save) -> tuple[float, float]:
        counts, times = [], []
        for i, response in enumerate(seeded.responses):
            statements[0] = 0
            started = time.perf_counter()
            save(i, response.id)
            times.append(time.perf_counter() - started)
            counts.append(statements[0])
        return statistics.median(counts), statistics.median(times) * 1000

    def product(i: int, response_id: int) -> None:
        reviews.save_review(sessions, actor=ADMIN, response_id=response_id, verdicts={
            c: (Verdict.MET if (i + c) % 2 else Verdict.UNMET, "") for c in criteria})

    def floor(i: int, response_id: int) -> None:
        with sessions.begin() as session:
            for c in criteria:
                session.execute(insert(m.HumanVerdictRow).values(
                    response_id=response_id, rubric_version_id=seeded.version.id,
                    criterion_id=c, stream="floor", seq=1, verdict="MET",
                    reviewer_key="floor", reviewer="floor", note=""))

    print(f"one save of {len(criteria)} criteria, 2 runs, {count} responses (SQLite):")
    for name, save in (("save_review (product)", product), ("plain INSERTs (floor)", floor)):
        statements_, ms = measure(save)
        print(f"  {name:24} statements median {statements_:5.0f}   time median {ms:7.1f} ms")


if __name__ == "__main__":
    main()
