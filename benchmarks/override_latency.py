"""How long does applying a human override and reading back the effective score take?

Builds a database with 10,000 grades (2,500 responses x 4 runs: two per-criterion, one
one-shot, one RubricAsJudge; 8 criteria, one negative), then repeatedly sets a human verdict
on a random response and reads back every run's effective grade for it through the service
functions the UI calls. Prints median and p95 in milliseconds, plus the time to read a whole
run's effective scores.

    .venv/bin/python benchmarks/override_latency.py                # a temp SQLite file
    .venv/bin/python benchmarks/override_latency.py --postgres     # a throwaway PostgreSQL
    .venv/bin/python benchmarks/override_latency.py --db postgresql+psycopg://...
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import event, insert

from grading.aggregation import aggregate_verdicts, holistic_to_scores
from grading.types import Criterion, Verdict
from storage import models as m
from storage.engine import open_database
from storage.services import datasets, reviews, rubrics, runs
from storage.services.reviewers import command_line_actor

BENCHMARK = command_line_actor("benchmark")

RESPONSES = 2_500
CRITERIA = [Criterion(name=f"c{i}", requirement=f"Requirement number {i}", weight=w)
            for i, w in enumerate([10, 8, 6, 5, 4, 3, 2, -7])]
GRADERS = ["per_criterion", "per_criterion", "one_shot", "rubric_as_judge"]


def build(sessions) -> tuple[list[int], list[int], list[int]]:
    rng = random.Random(7)
    version = rubrics.create_rubric(sessions, "Benchmark", CRITERIA, actor=BENCHMARK)
    dataset = datasets.create_dataset(sessions, "Benchmark", responses=[
        {"id": f"r{i}", "query": f"question {i}", "text": "word " * rng.randint(50, 400)}
        for i in range(RESPONSES)], actor=BENCHMARK)
    response_ids = [r.id for r in datasets.list_responses(sessions, dataset.id, limit=None)]
    run_ids = [runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                               grader=g, model=f"judge-{n}", actor=BENCHMARK).id
               for n, g in enumerate(GRADERS)]
    criterion_ids = [c.id for c in version.criteria]
    verdicts = list(Verdict)
    with sessions.begin() as session:
        for run_id, grader in zip(run_ids, GRADERS, strict=True):
            grade_rows, judged = [], []
            for response_id in response_ids:
                if grader == "rubric_as_judge":
                    result = holistic_to_scores(CRITERIA, rng.uniform(0, 100))
                    judged.append(None)
                else:
                    chosen = [rng.choice(verdicts) for _ in CRITERIA]
                    result = aggregate_verdicts(CRITERIA, chosen)
                    judged.append(chosen)
                grade_rows.append({
                    "run_id": run_id, "response_id": response_id, "score": result.score,
                    "raw_score": result.raw_score, "cannot_assess_count": 0,
                    "created_at": m.utcnow(), "total_tokens": 500, "cost": 0.001,
                })
            grade_ids = list(session.scalars(
                insert(m.GradeRow).returning(m.GradeRow.id, sort_by_parameter_order=True),
                grade_rows))
            criterion_rows = [
                {"grade_id": grade_id, "criterion_id": cid, "position": pos,
                 "verdict": chosen[pos].value, "reason": "because", "error": None}
                for grade_id, chosen in zip(grade_ids, judged, strict=True) if chosen
                for pos, cid in enumerate(criterion_ids)
            ]
            if criterion_rows:
                session.execute(insert(m.GradeCriterionRow), criterion_rows)
    return response_ids, criterion_ids, run_ids


def measure(sessions, response_ids, criterion_ids, run_ids, rounds: int) -> None:
    rng = random.Random(11)
    timings: list[float] = []
    writes: list[float] = []
    statements = [0]

    def count(*_args: object) -> None:
        statements[0] += 1

    engine = sessions.kw["bind"]
    event.listen(engine, "before_cursor_execute", count)
    for n in range(rounds):
        response_id = rng.choice(response_ids)
        started = time.perf_counter()
        reviews.set_human_verdict(
            sessions, response_id=response_id, criterion_id=rng.choice(criterion_ids),
            verdict=rng.choice(list(Verdict)), reviewer=f"reviewer{n % 3}")
        written = time.perf_counter()
        effective = reviews.effective_grades_for_response(sessions, response_id)
        timings.append((time.perf_counter() - started) * 1000)
        writes.append((written - started) * 1000)
        assert len(effective) == len(run_ids)
    print(f"override + effective read-back ({rounds} rounds): {_figures(timings)}")
    event.remove(engine, "before_cursor_execute", count)
    print(f"  of which the override write: {_figures(writes)}")
    print(f"  SQL statements per override + read-back: {statements[0] / rounds:.1f}")
    started = time.perf_counter()
    whole = reviews.effective_grades_for_run(sessions, run_ids[0])
    print(f"effective scores of a whole run ({len(whole)} grades): "
          f"{(time.perf_counter() - started) * 1000:.0f} ms")
    started = time.perf_counter()
    page = reviews.effective_grades_for_run(sessions, run_ids[0], response_ids[:50])
    print(f"effective scores of a 50-response page: "
          f"{(time.perf_counter() - started) * 1000:.1f} ms ({len(page)} grades)")


def _figures(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return (f"median {statistics.median(ordered):.1f} ms, p95 {p95:.1f} ms, "
            f"max {ordered[-1]:.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--postgres", action="store_true",
                        help="start a throwaway PostgreSQL on 127.0.0.1 (needs initdb/pg_ctl)")
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    server = None
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{Path(tmp) / 'bench.db'}"
        if args.postgres:
            from tests.storage import postgres_server

            server = postgres_server.start()
            url = server.url()
        try:
            sessions = open_database(url)
            backend = sessions.kw["bind"].dialect.name
            started = time.perf_counter()
            ids = build(sessions)
            print(f"{backend}: built {RESPONSES * len(GRADERS):,} grades in "
                  f"{time.perf_counter() - started:.1f} s")
            measure(sessions, *ids, rounds=args.rounds)
            sessions.kw["bind"].dispose()
        finally:
            if server is not None:
                server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
