"""Agreement between sources computed from counts the database makes (issue 41, step 1).

Between two runs, one ``GROUP BY (criterion, verdict_a, verdict_b)`` over the pairs of
verdicts they share, plus one ``GROUP BY (criterion, verdict)`` per run for the keys only
one of them answered. Between people and a run, the effective human verdicts (few: only
reviewed responses) come from storage.services.consensus and the run's verdicts on the
reviewed responses are read as compact ``(response, criterion, verdict)`` rows. The figures
come from ``grading.agreement.compare_counts``, and are identical to the Agreement report's
pairwise figures (tests/storage/test_agreement_counts.py). Panels are not covered yet:
their verdicts are still computed from their members when read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy import Select, and_, func, select
from sqlalchemy.orm import Session, aliased

from grading.agreement import AgreementByCriterion, compare_counts_by_criterion
from grading.types import Verdict
from storage import models as m
from storage.engine import SessionFactory
from storage.repositories import rubrics as rubric_repo
from storage.services.agreement_sources import HUMAN, current_human_verdicts

PairCounts = Counter[tuple[Verdict | None, Verdict | None]]
CountsByCriterion = dict[int, PairCounts]
_CHUNK = 500  # response ids per IN (...): far below the drivers' parameter limits


def _verdicts_of(run_id: int) -> Select:
    """(response_id, criterion_id, verdict) of a run's judged criteria, without the
    responses a calibrated run showed as examples."""
    grade, row = aliased(m.GradeRow), aliased(m.GradeCriterionRow)
    shown = select(m.RunExampleRow.response_id).where(m.RunExampleRow.run_id == run_id)
    return (select(grade.response_id, row.criterion_id, row.verdict)
            .join(grade, grade.id == row.grade_id)
            .where(grade.run_id == run_id, row.verdict.is_not(None),
                   grade.response_id.not_in(shown)))


def pair_counts_query(run_a: int, run_b: int) -> Select:
    """The one GROUP BY: (criterion, verdict of a, verdict of b) -> pairs, on shared keys."""
    a, b = _verdicts_of(run_a).subquery("a"), _verdicts_of(run_b).subquery("b")
    return (select(a.c.criterion_id, a.c.verdict, b.c.verdict.label("verdict_b"), func.count())
            .join(b, and_(b.c.response_id == a.c.response_id,
                          b.c.criterion_id == a.c.criterion_id))
            .group_by(a.c.criterion_id, a.c.verdict, b.c.verdict))


def totals_query(run_id: int) -> Select:
    """(criterion, verdict) -> count of one run's verdicts."""
    rows = _verdicts_of(run_id).subquery("v")
    return (select(rows.c.criterion_id, rows.c.verdict, func.count())
            .group_by(rows.c.criterion_id, rows.c.verdict))


def _totals(session: Session, run_id: int) -> Counter[tuple[int, Verdict]]:
    return Counter({(cid, Verdict(v)): n for cid, v, n in session.execute(totals_query(run_id))})


def _with_one_sided(shared: Counter[tuple[int, Verdict, Verdict]],
                    totals_a: Counter[tuple[int, Verdict]],
                    totals_b: Counter[tuple[int, Verdict]]) -> CountsByCriterion:
    """Shared pair counts plus (verdict, None) / (None, verdict) for the keys only one side
    has: its total minus the shared pairs it is in."""
    found: CountsByCriterion = {}
    in_a: Counter[tuple[int, Verdict]] = Counter()
    in_b: Counter[tuple[int, Verdict]] = Counter()
    for (cid, va, vb), n in shared.items():
        found.setdefault(cid, Counter())[va, vb] += n
        in_a[cid, va] += n
        in_b[cid, vb] += n
    for (cid, va), n in totals_a.items():
        if n - in_a[cid, va]:
            found.setdefault(cid, Counter())[va, None] += n - in_a[cid, va]
    for (cid, vb), n in totals_b.items():
        if n - in_b[cid, vb]:
            found.setdefault(cid, Counter())[None, vb] += n - in_b[cid, vb]
    return found


def run_pair_counts(session: Session, run_a: int, run_b: int,
                    totals: dict[int, Counter[tuple[int, Verdict]]] | None = None,
                    ) -> CountsByCriterion:
    """Per criterion, the counts of (verdict of a, verdict of b); None for a key one lacks.
    ``totals``: each run's ``(criterion, verdict)`` counts when already read."""
    totals = totals or {}
    shared = Counter({(cid, Verdict(va), Verdict(vb)): n
                      for cid, va, vb, n in session.execute(pair_counts_query(run_a, run_b))})
    return _with_one_sided(shared, totals.get(run_a) or _totals(session, run_a),
                           totals.get(run_b) or _totals(session, run_b))


def human_run_counts(session: Session, humans: Mapping[tuple[int, int], Verdict],
                     run_id: int, totals: Counter[tuple[int, Verdict]] | None = None,
                     ) -> CountsByCriterion:
    """Per criterion, the counts of (effective human verdict, run's verdict)."""
    reviewed = sorted({rid for rid, _cid in humans})
    shared: Counter[tuple[int, Verdict, Verdict]] = Counter()
    query = _verdicts_of(run_id).subquery("v")
    for start in range(0, len(reviewed), _CHUNK):
        for rid, cid, verdict in session.execute(
                select(query).where(query.c.response_id.in_(reviewed[start:start + _CHUNK]))):
            human = humans.get((rid, cid))
            if human is not None:
                shared[cid, human, Verdict(verdict)] += 1
    totals_h = Counter((cid, v) for (_rid, cid), v in humans.items())
    return _with_one_sided(shared, totals_h, totals or _totals(session, run_id))


def pairwise_agreement(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    run_ids: Sequence[int] | None = None,
    humans: Mapping[tuple[int, int], Verdict] | None = None,
) -> dict[tuple[str, str], AgreementByCriterion]:
    """The Agreement report's ``pairwise`` for people and runs (panels not yet), from counts.

    Sources as in the report: "human" first when anyone reviewed, then the per-criterion runs
    with at least one verdict, by id; every criterion of the version gets a row.
    ``humans``: the effective human verdicts by (response, criterion) when already known
    (``AgreementData.verdicts["human"]``); read through ``consensus`` otherwise.
    """
    with sessions() as session:
        criteria = [c.id for c in rubric_repo.criteria_of(session, rubric_version_id)]
        query = (select(m.RunRow.id).where(
            m.RunRow.rubric_version_id == rubric_version_id, m.RunRow.dataset_id == dataset_id,
            m.RunRow.grader != "rubric_as_judge").order_by(m.RunRow.id))
        if run_ids is not None:
            query = query.where(m.RunRow.id.in_(list(run_ids)))
        totals = {rid: _totals(session, rid) for rid in session.scalars(query)}
        runs = [rid for rid, found in totals.items() if found]
        if humans is None:
            humans = {(h.response_id, h.criterion_id): h.verdict
                      for h in current_human_verdicts(session, rubric_version_id, dataset_id)}
        counts: dict[tuple[str, str], CountsByCriterion] = {}
        if humans:
            for rid in runs:
                counts[HUMAN, f"run:{rid}"] = human_run_counts(session, humans, rid, totals[rid])
        for i, first in enumerate(runs):
            for second in runs[i + 1:]:
                counts[f"run:{first}", f"run:{second}"] = run_pair_counts(session, first, second,
                                                                   totals)
    return {pair: compare_counts_by_criterion(_every_criterion(criteria, found))
            for pair, found in counts.items()}


def _every_criterion(criteria: Iterable[int], found: CountsByCriterion) -> CountsByCriterion:
    return {cid: found.get(cid, Counter()) for cid in criteria}
