"""How fast is the judge trust report on 10,000 responses x 8 criteria x 3 runs?

Builds a database with 10,000 responses (texts of 50-600 words), 8 criteria and three runs
of the same judge (same model and grader: the stability samples), whose verdicts flip on
about 5% of the (response, criterion) pairs between runs and favour longer answers on one
criterion; people reviewed a random sample of 300 (the review set's sample) and 200 hard
cases outside it. Then times, cold (no Streamlit cache), through the service functions the
Agreement page and ``rubric-workbench agreement`` call:

- the agreement report (gather + every pairwise figure), which the page has cached already;
- the trust report from it (lengths, samples, shuffles read with SQL; PPI, stability,
  length and position figures);
- both together;

beside a reference measured in the same run, on the same database: one plain read of every
verdict of the runs into a dict (``SELECT response_id, criterion_id, verdict``), the least
any report over these verdicts pays. On a busy shared machine the ratio to the reference says
more than the seconds.

    .venv/bin/python benchmarks/trust_report.py               # a temp SQLite file
    .venv/bin/python benchmarks/trust_report.py --postgres    # a throwaway PostgreSQL
    .venv/bin/python benchmarks/trust_report.py --db URL
    .venv/bin/python benchmarks/trust_report.py --samples-in-run   # one run, 3 samples each

``--panel``: also a majority panel of the three runs (each member's samples are the three
runs, so the panel has three samples: its stability combines them response by response).

``--samples-in-run``: instead of three runs, one run that asked the judge three times per
criterion (run setting ``samples``), each sample's verdict stored in ``grade_criteria.samples``
and the row's verdict their majority: the stability figures come from those samples.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import insert, select

from grading.aggregation import aggregate_verdicts
from grading.types import Criterion, Verdict
from storage import models as m
from storage.engine import open_database
from storage.services import (
    agreement,
    datasets,
    effective_upkeep,
    panels,
    review_sets,
    rubrics,
    runs,
    trust_report,
)
from storage.services.reviewers import command_line_actor

BENCHMARK = command_line_actor("benchmark")

RESPONSES = 10_000
RUNS = 3
SAMPLE = 300
HARD_CASES = 200
CRITERIA = [Criterion(name=f"c{i}", requirement=f"Requirement number {i}", weight=w)
            for i, w in enumerate([10, 8, 6, 5, 4, 3, 2, -7])]
WORDS = ["dose", "source", "margin", "patient", "answer", "table", "cites", "concise"]


def build(sessions, within: bool = False):
    rng = random.Random(7)
    version = rubrics.create_rubric(sessions, "Benchmark", CRITERIA, actor=BENCHMARK)
    dataset = datasets.create_dataset(sessions, "Benchmark", responses=[
        {"id": f"r{i}", "query": f"question {i}",
         "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(50, 600)))}
        for i in range(RESPONSES)], actor=BENCHMARK)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    response_ids = [r.id for r in responses]
    lengths = {r.id: len(r.output) for r in responses}
    criterion_ids = [c.id for c in version.criteria]
    truth = {rid: [Verdict.MET if rng.random() < 0.6 else Verdict.UNMET for _ in CRITERIA]
             for rid in response_ids}
    run_ids = [runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                               grader="per_criterion", model="openai/judge",
                               settings={"extra": {"samples": RUNS}} if within else None,
                               actor=BENCHMARK).id for _ in range(1 if within else RUNS)]
    with sessions.begin() as session:
        for run_id in run_ids:
            grade_rows, judged, sampled = [], [], []
            for rid in response_ids:
                chosen, samples = [], []
                for pos, verdict in enumerate(truth[rid]):
                    drawn = [_draw(rng, pos, verdict, lengths[rid])
                             for _ in range(RUNS if within else 1)]
                    samples.append([v.value for v in drawn] if within else None)
                    chosen.append(max(drawn, key=drawn.count))  # 3 binary samples: no tie
                sampled.append(samples)
                result = aggregate_verdicts(CRITERIA, chosen)
                grade_rows.append({
                    "run_id": run_id, "response_id": rid, "score": result.score,
                    "raw_score": result.raw_score, "cannot_assess_count": 0,
                    "created_at": m.utcnow(), "total_tokens": 500, "cost": 0.001})
                judged.append(chosen)
            grade_ids = list(session.scalars(
                insert(m.GradeRow).returning(m.GradeRow.id, sort_by_parameter_order=True),
                grade_rows))
            session.execute(insert(m.GradeCriterionRow), [
                {"grade_id": gid, "criterion_id": cid, "position": pos,
                 "verdict": chosen[pos].value, "reason": "", "error": None,
                 "samples": samples[pos]}
                for gid, chosen, samples in zip(grade_ids, judged, sampled, strict=True)
                for pos, cid in enumerate(criterion_ids)])
    for run_id in run_ids:
        runs.start_run(sessions, run_id, worker="benchmark")
        runs.finish_run(sessions, run_id)
    review_sets.update_settings(sessions, actor=BENCHMARK, dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=1,
                                sample_size=SAMPLE)
    sample = review_sets.sample_ids(dataset.id, version.id, response_ids, SAMPLE)
    others = rng.sample(sorted(set(response_ids) - set(sample)), HARD_CASES)
    with sessions.begin() as session:
        session.execute(insert(m.HumanVerdictRow), [
            {"response_id": rid, "rubric_version_id": version.id, "criterion_id": cid,
             "stream": "reviewer", "seq": 1, "verdict": truth[rid][pos].value,
             "reviewer_key": "reviewer", "reviewer": "Reviewer", "note": "",
             "created_at": m.utcnow()}
            for rid in [*sample, *others] for pos, cid in enumerate(criterion_ids)])
        # Bulk inserts bypass the writers that keep effective_verdicts (rebuild-effective).
        effective_upkeep.rebuild(session)
    return version.id, dataset.id


def _draw(rng: random.Random, pos: int, verdict: Verdict, length: int) -> Verdict:
    """One judge verdict: c0 favours long answers; every criterion errs (and flips) on ~5%."""
    long_bias = pos == 0 and rng.random() < length / 8_000
    if long_bias or rng.random() < 0.05:
        return Verdict.MET if long_bias else (
            Verdict.UNMET if verdict is Verdict.MET else Verdict.MET)
    return verdict


def read_every_verdict(sessions, version_id: int) -> dict:
    """The reference: every verdict of the runs of this rubric version, read into a dict."""
    with sessions() as session:
        return {(rid, cid): verdict for rid, cid, verdict in session.execute(
            select(m.GradeRow.response_id, m.GradeCriterionRow.criterion_id,
                   m.GradeCriterionRow.verdict)
            .join(m.GradeRow, m.GradeRow.id == m.GradeCriterionRow.grade_id)
            .join(m.RunRow, m.RunRow.id == m.GradeRow.run_id)
            .where(m.RunRow.rubric_version_id == version_id))}


def timed(label: str, fn, rounds: int = 3):
    """Wall and CPU seconds (CPU: this process only, so a busy shared machine shows less in
    it than in the wall time)."""
    timings, cpu, result = [], [], None
    for _ in range(rounds):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = fn()
        timings.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    print(f"  {label:<46} wall median {statistics.median(timings):6.2f} s, "
          f"max {max(timings):6.2f} s; CPU median {statistics.median(cpu):6.2f} s")
    timed.last = statistics.median(timings)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--postgres", action="store_true",
                        help="start a throwaway PostgreSQL on 127.0.0.1 (needs initdb/pg_ctl)")
    parser.add_argument("--panel", action="store_true",
                        help="also a majority panel of the three runs (not with "
                             "--samples-in-run)")
    parser.add_argument("--samples-in-run", action="store_true",
                        help=f"one run asking {RUNS} samples per criterion, not {RUNS} runs")
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
            version_id, dataset_id = build(sessions, args.samples_in_run)
            if args.panel and not args.samples_in_run:
                run_ids = [r.id for r in runs.list_runs(sessions, rubric_version_id=version_id,
                                                        dataset_id=dataset_id)]
                panels.create_panel(sessions, run_ids=run_ids, rule="majority",
                                    actor=BENCHMARK)
            print(f"{backend}: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
                  "cores")
            shape = (f"{RUNS} samples in one run" if args.samples_in_run
                     else f"{RUNS} runs")
            print(f"{backend}: built {RESPONSES:,} responses x {len(CRITERIA)} criteria x "
                  f"{shape} in {time.perf_counter() - started:.1f} s")
            timed("reference: read every verdict (plain SELECT)",
                  lambda: read_every_verdict(sessions, version_id))
            reference = timed.last
            report = timed("agreement report (the page caches it)",
                           lambda: agreement.agreement_report(sessions, version_id, dataset_id))
            trust = timed("trust report from the agreement report",
                          lambda: trust_report.build_trust(sessions, report))
            figures = timed.last
            timed("both, cold", lambda: trust_report.trust_report(
                sessions, version_id, dataset_id))
            print(f"  trust report from the agreement report: {figures:.2f} s wall "
                  f"({figures / reference:.1f}x the reference read); target 2 s: "
                  f"{'met' if figures < 2 else 'missed'}; whole report cold: "
                  f"{timed.last:.2f} s ({timed.last / reference:.1f}x)")
            for judge in trust.judges:
                print(f"  {judge.label}: {judge.verdict}")
            sessions.kw["bind"].dispose()
        finally:
            if server is not None:
                server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
