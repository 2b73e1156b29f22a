"""The Agreement report's judges' count after one grade lands (issue 41: caches invalidated
by what changed), in a NEW process: the stored count read (``agreement_judge_store.
kept_patterns``), the grade landed, then the count the first read after it makes, timed.
The code measured is the one on PYTHONPATH (run it from the base's and the branch's
worktrees in turn on the same COPY of a benchmark world).

    --setup N   once: N grades of the last run made transient failures (their grades
                deleted, a transient failure stored in their place through record_grades,
                so the panels' decisions follow): the responses a requeued run grades again
    (default)   one round: untimed, the count made by this code and stored;
                one of those failures re-graded (a grade lands); timed, the next read of
                the count.
    --inputs    the same round for the judges' inputs (agreement_inputs_store.kept_inputs,
                the count asked for through kept_patterns when they are made whole): both
                made and stored untimed, a grade lands, the next read of the inputs timed
                ("made_whole": make_inputs was called).
    Each prints one JSON line: wall and CPU seconds (this process's; the server's counting
    is not in it), whether it was counted whole, and the untimed whole count's wall (the
    fallback, as this code makes it).

The database is opened without migrating (the base code does not know the branch's
revision): migrate it with the branch's code once before.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _report(session, version_id: int, verdict):
    from sqlalchemy import select

    from grading.types import CriterionReport, EvaluationReport
    from storage import models as m

    criteria = session.execute(
        select(m.CriterionRow.requirement, m.CriterionRow.weight)
        .where(m.CriterionRow.version_id == version_id)
        .order_by(m.CriterionRow.position)).all()
    if verdict is None:
        return EvaluationReport(score=None, error="HTTP 503")
    return EvaluationReport(score=0.5, raw_score=0.5, report=[
        CriterionReport(requirement=c.requirement, weight=c.weight, verdict=verdict(i),
                        reason="re-graded") for i, c in enumerate(criteria)])


def _counted(owner, name: str) -> dict:
    """``owner.name`` wrapped to count its calls (whether the timed read made it whole)."""
    calls, real = {"n": 0}, getattr(owner, name)

    def wrapped(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    setattr(owner, name, wrapped)
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--version", type=int, required=True)
    parser.add_argument("--dataset", type=int, required=True)
    parser.add_argument("--setup", type=int, default=0)
    parser.add_argument("--inputs", action="store_true",
                        help="time the judges' inputs' read, not the count's")
    parser.add_argument("--land", action="store_true",
                        help="only land one grade (then time the page: agreement_page_cold)")
    args = parser.parse_args()

    from sqlalchemy import delete, select, update

    from grading.types import Verdict
    from storage import models as m
    from storage.engine import create_db_engine, make_session_factory
    from storage.services import agreement_inputs_store, agreement_judge_store, runs

    sessions = make_session_factory(create_db_engine(args.db))
    with sessions() as session:
        run_id = max(session.scalars(select(m.RunRow.id).where(
            m.RunRow.rubric_version_id == args.version, m.RunRow.dataset_id == args.dataset)))
    if args.setup:
        with sessions() as session, session.begin():
            ids = list(session.scalars(
                select(m.GradeRow.response_id).where(m.GradeRow.run_id == run_id)
                .order_by(m.GradeRow.response_id.desc()).limit(args.setup)))
            session.execute(delete(m.GradeRow).where(m.GradeRow.run_id == run_id,
                                                     m.GradeRow.response_id.in_(ids)))
            session.execute(update(m.RunRow).where(m.RunRow.id == run_id)
                            .values(done_count=m.RunRow.done_count - len(ids)))
            failed = _report(session, args.version, None)
        runs.record_grades(sessions, run_id, [runs.NewGrade(rid, failed, 0.1, transient=True)
                                              for rid in ids])
        print(json.dumps({"setup": len(ids), "run": run_id}))
        return

    whole_s = None
    if not args.land:
        # untimed: counted by this code and stored (rows another code stored go first: the
        # base keeps no open part, the branch would count whole when advancing from them)
        with sessions() as session, session.begin():
            session.execute(delete(m.JudgePatternSetRow))
            session.execute(delete(m.AgreementInputsRow))
        at = time.perf_counter()
        agreement_judge_store.kept_patterns(sessions, args.version, args.dataset)
        if args.inputs:
            agreement_inputs_store.kept_inputs(
                sessions, args.version, args.dataset,
                lambda: agreement_judge_store.kept_patterns(sessions, args.version,
                                                            args.dataset))
        whole_s = round(time.perf_counter() - at, 3)  # the whole count, as this code makes it
    with sessions() as session:
        rid = session.scalar(select(m.GradeRow.response_id).where(
            m.GradeRow.run_id == run_id, m.GradeRow.transient.is_(True))
            .order_by(m.GradeRow.response_id).limit(1))
        if rid is None:
            sys.exit("no transient failure left: run --setup again on a new copy")
        report = _report(session, args.version,
                         lambda i: (Verdict.MET, Verdict.UNMET)[(rid + i) % 2])
    runs.record_grades(sessions, run_id, [runs.NewGrade(rid, report, 0.1)])  # a grade lands
    if args.land:
        print(json.dumps({"landed": rid}))
        return

    whole = _counted(agreement_judge_store, "judge_patterns")
    if args.inputs:
        made = _counted(agreement_inputs_store, "make_inputs")
        started, cpu = time.perf_counter(), time.process_time()
        found = agreement_inputs_store.kept_inputs(
            sessions, args.version, args.dataset,
            lambda: agreement_judge_store.kept_patterns(sessions, args.version, args.dataset))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(json.dumps({"inputs": True, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                          "made_whole": bool(made["n"]), "counted_whole": bool(whole["n"]),
                          "units": len(found.folded.units), "response": rid,
                          "whole_wall_s": whole_s}))
        return
    started, cpu = time.perf_counter(), time.process_time()
    found = agreement_judge_store.kept_patterns(sessions, args.version, args.dataset)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(json.dumps({"wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                      "counted_whole": bool(whole["n"]), "rows": len(found.rows),
                      "response": rid, "whole_count_wall_s": whole_s}))


if __name__ == "__main__":
    main()
