"""How fast do the Results table and the Review page load on 10,000 responses x 2 runs?

Builds a database with 10,000 responses (texts of 50-400 words), 8 criteria (one negative)
and two per-criterion runs whose verdicts disagree on about 15% of responses, with 2% failed
grades and human verdicts on 500 responses. Then times, through the service functions the
pages call (cold: no Streamlit cache):

- one page (50 rows) of the results table: dataset order, each filter, score sorting,
  a text search, a late page;
- the review queue;
- one review item (the response with every run's effective grade, verdicts, history);
- saving a verdict and reading the item back.

    .venv/bin/python benchmarks/results_page.py               # a temp SQLite file
    .venv/bin/python benchmarks/results_page.py --postgres    # a throwaway PostgreSQL
    .venv/bin/python benchmarks/results_page.py --db URL
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

from sqlalchemy import insert

from grading.aggregation import aggregate_verdicts
from grading.types import Criterion, Verdict
from storage import models as m
from storage.engine import open_database
from storage.services import datasets, reviews, rubrics, runs, verdict_keys
from storage.services.results import (
    ResultsFilter,
    VerdictFilter,
    grade_facts,
    results_page,
    reviewed_effective_scores,
)
from storage.services.review_queue import response_detail, review_queue
from storage.services.reviewers import command_line_actor, local_actor

BENCHMARK = command_line_actor("benchmark")

RESPONSES = 10_000
REVIEWED = 500
CRITERIA = [Criterion(name=f"c{i}", requirement=f"Requirement number {i}", weight=w)
            for i, w in enumerate([10, 8, 6, 5, 4, 3, 2, -7])]
MODELS = ["gpt-x", "claude-y", "llama-z", "mistral-w"]  # a metadata column kept from the upload
WORDS = ["dose", "source", "margin", "patient", "answer", "table", "cites", "concise",
         "harmful", "summary"]


def build(sessions):
    rng = random.Random(7)
    version = rubrics.create_rubric(sessions, "Benchmark", CRITERIA, actor=BENCHMARK)
    dataset = datasets.create_dataset(sessions, "Benchmark", responses=[
        {"id": f"r{i}", "query": f"question {i} about {rng.choice(WORDS)}",
         "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(50, 400))),
         "model": MODELS[i % len(MODELS)]}
        for i in range(RESPONSES)], actor=BENCHMARK)
    response_ids = [r.id for r in datasets.list_responses(sessions, dataset.id, limit=None)]
    run_ids = [runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                               grader="per_criterion", model=f"judge-{n}",
                                   actor=BENCHMARK).id for n in range(2)]
    criterion_ids = [c.id for c in version.criteria]
    first_verdicts = {rid: [rng.choice([Verdict.MET, Verdict.UNMET]) for _ in CRITERIA]
                      for rid in response_ids}
    with sessions.begin() as session:
        for n, run_id in enumerate(run_ids):
            grade_rows, judged = [], []
            for rid in response_ids:
                chosen = list(first_verdicts[rid])
                failed = n == 1 and rng.random() < 0.02
                if n == 1 and rng.random() < 0.15:
                    flip = rng.randrange(len(CRITERIA))
                    chosen[flip] = Verdict.UNMET if chosen[flip] is Verdict.MET else Verdict.MET
                result = aggregate_verdicts(CRITERIA, chosen)
                grade_rows.append({
                    "run_id": run_id, "response_id": rid,
                    "score": None if failed else result.score,
                    "raw_score": None if failed else result.raw_score,
                    "error": "the judge failed" if failed else None, "cannot_assess_count": 0,
                    "created_at": m.utcnow(), "total_tokens": 500, "cost": 0.001,
                })
                judged.append(None if failed else chosen)
            grade_ids = list(session.scalars(
                insert(m.GradeRow).returning(m.GradeRow.id, sort_by_parameter_order=True),
                grade_rows))
            session.execute(insert(m.GradeCriterionRow), [
                {"grade_id": gid, "criterion_id": cid, "position": pos,
                 "verdict": chosen[pos].value, "reason": "because " * 20, "error": None}
                for gid, chosen in zip(grade_ids, judged, strict=True) if chosen
                for pos, cid in enumerate(criterion_ids)])
        # bulk inserts bypass record_grades, which keys each grade: key them here
        verdict_keys.fill(session, only_missing=True)
    for rid in rng.sample(response_ids, REVIEWED):
        reviews.set_human_verdict(sessions, response_id=rid,
                                  criterion_id=rng.choice(criterion_ids),
                                  verdict=rng.choice(list(Verdict)), actor=local_actor("bench"))
    return version.id, dataset.id, response_ids, criterion_ids, run_ids


def timed(label: str, fn, rounds: int = 5):
    timings, result = [], None
    for _ in range(rounds):
        started = time.perf_counter()
        result = fn()
        timings.append((time.perf_counter() - started) * 1000)
    print(f"  {label:<52} median {statistics.median(timings):7.1f} ms   "
          f"max {max(timings):7.1f} ms")
    return result


def measure(sessions, version_id, dataset_id, response_ids, criterion_ids, run_ids) -> None:
    where = {"dataset_id": dataset_id, "rubric_version_id": version_id, "run_ids": run_ids}
    print("cacheable parts (the app recomputes them only after a new grade / verdict):")
    facts = timed("grade facts: failures, disagreements, judge scores",
                  lambda: grade_facts(sessions, **where), rounds=3)
    reviewed = timed(f"effective scores of the {REVIEWED} reviewed responses",
                     lambda: reviewed_effective_scores(sessions, **where), rounds=3)

    for title, cached in (("cold (nothing cached)", {}),
                          ("as the app runs it (grade facts and reviewed scores cached)",
                           {"facts": facts, "reviewed_scores": reviewed})):
        def page(cached=cached, **kwargs):
            return results_page(sessions, **where, limit=50, **cached, **kwargs)

        print(f"results table, one page of 50 rows, {title}:")
        first = timed("dataset order", page)
        if not cached:
            print(f"    ({first.total:,} responses, {first.disagree_total:,} disagree, "
                  f"{first.failed_total:,} failed, {first.reviewed_total:,} reviewed)")
        timed("judges disagree", lambda page=page: page(
            filters=ResultsFilter(disagree_only=True)))
        timed("judge failed", lambda page=page: page(filters=ResultsFilter(failed_only=True)))
        timed("reviewed only", lambda page=page: page(
            filters=ResultsFilter(reviewed="reviewed")))
        timed("sorted by effective score, descending", lambda page=page: page(
            sort="score", sort_run_id=run_ids[1], descending=True))
        timed("score between 0.2 and 0.6 (effective)", lambda page=page: page(
            filters=ResultsFilter(min_score=0.2, max_score=0.6)))
        timed("sorted by gap between runs", lambda page=page: page(
            sort="spread", descending=True))
        timed("text search 'margin patient'", lambda page=page: page(
            filters=ResultsFilter(search="margin patient")))
        timed("page 150 (offset 7,450)", lambda page=page: page(offset=7_450))
        timed("metadata column model = 'claude-y' (SQL)", lambda page=page: page(
            filters=ResultsFilter(metadata=(("model", "claude-y"),))))
        timed("criterion c2 effectively MET in run 2", lambda page=page: page(
            filters=ResultsFilter(verdict=VerdictFilter(criterion_ids[2], "MET",
                                                        run_ids[1]))))
        timed("dataset order + score distribution (20 bins)", lambda page=page: page(
            distribution_bins=20))
    print("review:")
    timed("review queue, cold", lambda: review_queue(sessions, **where))
    queue = timed("review queue, grade facts cached", lambda: review_queue(
        sessions, **where, facts=facts))
    item = queue[0].response_id
    timed("one review item (response, 2 effective grades, history)",
          lambda: response_detail(sessions, item, version_id, run_ids), rounds=20)
    rng = random.Random(3)

    def save_and_read():
        rid = rng.choice(response_ids)
        reviews.set_human_verdict(sessions, response_id=rid,
                                  criterion_id=rng.choice(criterion_ids),
                                  verdict=rng.choice(list(Verdict)), actor=local_actor("bench2"))
        return response_detail(sessions, rid, version_id, run_ids)

    timed("save a verdict + read the item back", save_and_read, rounds=20)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--postgres", action="store_true",
                        help="start a throwaway PostgreSQL on 127.0.0.1 (needs initdb/pg_ctl)")
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
            print(f"{backend}: built {RESPONSES:,} responses x 2 runs x {len(CRITERIA)} "
                  f"criteria in {time.perf_counter() - started:.1f} s")
            measure(sessions, *ids)
            sessions.kw["bind"].dispose()
        finally:
            if server is not None:
                server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
