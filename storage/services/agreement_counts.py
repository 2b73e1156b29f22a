"""Agreement between sources computed from counts the database makes (issue 41).

A source's verdicts are one query of ``(response, criterion, verdict, at)`` rows: people's
the decided rows of ``effective_verdicts``, a run's its ``grade_criteria`` (less the
responses a calibrated run showed as examples), a panel's its stored ``panel_verdicts``.
Between two sources, one ``GROUP BY (criterion, verdict_a, verdict_b)`` over the keys both
answered, plus one ``GROUP BY (criterion, verdict)`` per source for the keys only one of
them has; nothing is joined in Python. Alpha across sources: one ``GROUP BY (criterion,
response)`` of the MET / UNMET / CANNOT_ASSESS answers over the union of the sources,
summed per criterion. The figures come from ``grading.agreement.compare_counts`` and
``alpha_from_counts`` and are identical to the report's computed from every verdict
(tests/storage/test_agreement_counts.py, test_report_counts.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from sqlalchemy import (
    Select,
    and_,
    func,
    select,
)
from sqlalchemy.orm import Session

from grading.agreement import (
    AgreementByCriterion,
    MultiSourceAgreement,
    MultiSourceAgreementByCriterion,
    alpha_from_counts,
    compare_counts_by_criterion,
)
from grading.types import Verdict
from storage import models as m
from storage.engine import SessionFactory
from storage.repositories import rubrics as rubric_repo
from storage.services import agreement_judge_counts, panels
from storage.services.agreement_folded import FoldedRows
from storage.services.agreement_sides import (
    DECODE,
    patterns_query,
    people_side,
    run_side,
    side_of,
)
from storage.services.agreement_sides import disagreeing_query as disagreeing_query
from storage.services.agreement_sides import panel_side as panel_side
from storage.services.agreement_sources import HUMAN, AgreementData

PairCounts = Counter[tuple[Verdict | None, Verdict | None]]
CountsByCriterion = dict[int, PairCounts]


def pair_counts_query(run_a: int, run_b: int) -> Select:
    """The one GROUP BY of two runs: (criterion, verdict of a, verdict of b) -> pairs."""
    return side_pair_query(run_side(run_a), run_side(run_b))


def totals_query(run_id: int) -> Select:
    """(criterion, verdict) -> count of one run's verdicts."""
    return side_totals_query(run_side(run_id))


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


def side_pair_query(first: Select, second: Select) -> Select:
    """The one GROUP BY of a pair of sources: (criterion, verdict of a, verdict of b) ->
    keys both answered."""
    a, b = first.subquery("a"), second.subquery("b")
    return (select(a.c.criterion_id, a.c.verdict, b.c.verdict.label("verdict_b"), func.count())
            .join(b, and_(b.c.response_id == a.c.response_id,
                          b.c.criterion_id == a.c.criterion_id))
            .group_by(a.c.criterion_id, a.c.verdict, b.c.verdict))


def side_totals_query(side: Select) -> Select:
    rows = side.subquery("v")
    return (select(rows.c.criterion_id, rows.c.verdict, func.count())
            .group_by(rows.c.criterion_id, rows.c.verdict))


def _side_counts(session: Session, first: Select, second: Select,
                 totals_a: Counter[tuple[int, Verdict]],
                 totals_b: Counter[tuple[int, Verdict]]) -> CountsByCriterion:
    shared = Counter({(cid, Verdict(va), Verdict(vb)): n for cid, va, vb, n
                      in session.execute(side_pair_query(first, second))})
    return _with_one_sided(shared, totals_a, totals_b)


def _side_totals(session: Session, side: Select) -> Counter[tuple[int, Verdict]]:
    return Counter({(cid, Verdict(v)): n
                    for cid, v, n in session.execute(side_totals_query(side))})


def pairwise_agreement(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    run_ids: Sequence[int] | None = None,
) -> dict[tuple[str, str], AgreementByCriterion]:
    """The Agreement report's ``pairwise`` for people and runs (not panels), from counts.

    Sources as in the report: "human" first when anyone reviewed, then the per-criterion runs
    with at least one verdict, by id; every criterion of the version gets a row.
    """
    with sessions() as session:
        criteria = [c.id for c in rubric_repo.criteria_of(session, rubric_version_id)]
        query = (select(m.RunRow.id).where(
            m.RunRow.rubric_version_id == rubric_version_id, m.RunRow.dataset_id == dataset_id,
            m.RunRow.grader != "rubric_as_judge").order_by(m.RunRow.id))
        if run_ids is not None:
            query = query.where(m.RunRow.id.in_(list(run_ids)))
        sides = {HUMAN: people_side(rubric_version_id, dataset_id)}
        sides.update({f"run:{rid}": run_side(rid) for rid in session.scalars(query)})
        totals = {key: _side_totals(session, side) for key, side in sides.items()}
        keys = [key for key in sides if totals[key]]
        counts = {(a, b): _side_counts(session, sides[a], sides[b], totals[a], totals[b])
                  for a, b in combinations(keys, 2)}
    return {pair: compare_counts_by_criterion(_every_criterion(criteria, found))
            for pair, found in counts.items()}


def kept_judges_fit(data: AgreementData, judges: agreement_judge_counts.JudgePatterns,
                     keys: Sequence[str], voters: Sequence[int]) -> bool:
    """The kept judges' count is of these sources, numbered as this count numbers them."""
    return ((judges.rubric_version_id, judges.dataset_id)
            == (data.rubric_version_id, data.dataset_id)
            and list(keys[:1]) == [HUMAN] and tuple(keys[1:]) == judges.keys
            and list(voters) == [0, *judges.voters])


def countable(sessions: SessionFactory, rubric_version_id: int, dataset_id: int) -> bool:
    """Whether every pair and alpha of the set's report can be counted: MET/UNMET criteria
    only, and every ready panel's stored decisions are the ones read (``panels.unsettled``
    empty: no member still grading, no other tie rule)."""
    with sessions() as session:
        if any(c.options is not None for c in rubric_repo.criteria_of(
                session, rubric_version_id)):
            return False
        ready = session.scalars(
            select(m.PanelRow.id).where(
                m.PanelRow.rubric_version_id == rubric_version_id,
                m.PanelRow.dataset_id == dataset_id,
                m.PanelRow.id.not_in(select(m.PanelFillRow.panel_id)))).all()
        return not any(panels.unsettled(session, panel_id) for panel_id in ready)


@dataclass(frozen=True)
class ReportCounts:
    """What the Agreement report takes from the database's counts: the pairs whose two
    sources could be counted, and alpha across the non-panel sources (None: not counted)."""

    pairwise: dict[tuple[str, str], AgreementByCriterion]
    alpha: MultiSourceAgreementByCriterion | None
    # Each counted source's verdicts (source key -> count), and how many keys got each
    # pattern of verdicts (``VerdictPatterns``): the disagreements per criterion of any
    # set of sources without reading a verdict.
    totals: dict[str, int] = field(default_factory=dict)
    patterns: VerdictPatterns | None = None

    def covers(self, data: AgreementData) -> bool:
        """Every pair of ``data``'s verdict sources and alpha were counted: the report needs
        none of the judges' verdicts (``AgreementData.complete`` may be False)."""
        keys = [s.key for s in data.verdict_sources]
        voters = [s.key for s in data.verdict_sources if not s.is_panel]
        return (all(pair in self.pairwise for pair in combinations(keys, 2))
                and (self.alpha is not None or not voters)
                and all(key in self.totals for key in keys))


@dataclass(frozen=True)
class VerdictPatterns:
    """Per (criterion, verdicts of ``keys`` in order) the number of keys (response,
    criterion) that got them; a verdict is MET, UNMET, CANNOT_ASSESS or None."""

    keys: tuple[str, ...]
    counts: dict[tuple[int, tuple[Verdict | None, ...]], int]

    def disagreements(self, keys: Sequence[str]) -> Counter[int]:
        """Per criterion, the keys where ``keys`` gave both MET and UNMET (what
        ``agreement.disagreements`` lists on MET/UNMET criteria)."""
        where = [self.keys.index(key) for key in keys]
        found: Counter[int] = Counter()
        for (cid, verdicts), n in self.counts.items():
            chosen = {verdicts[i] for i in where}
            if Verdict.MET in chosen and Verdict.UNMET in chosen:
                found[cid] += n
        return found

    def alone(self, key: str, criteria: Sequence[int]) -> AgreementByCriterion:
        """``key``'s agreement with a source that gave no verdict: every one of its verdicts
        is one-sided (what ``compare_verdicts({}, its verdicts)`` gives)."""
        i = self.keys.index(key)
        found: CountsByCriterion = {}
        for (cid, verdicts), n in self.counts.items():
            if verdicts[i] is not None:
                found.setdefault(cid, Counter())[None, verdicts[i]] += n
        return compare_counts_by_criterion(_every_criterion(criteria, found))


def report_counts(sessions: SessionFactory, data: AgreementData,
                  judges: agreement_judge_counts.JudgePatterns | None = None) -> ReportCounts:
    """Every pair of ``data``'s verdict sources, and alpha across its non-panel sources,
    from one count of the sources' verdict patterns (``patterns_query``: people from
    ``effective_verdicts``, panels from ``panel_verdicts``, runs from ``grade_criteria``).
    A panel whose stored decisions are not all the ones read (a member still grading,
    another tie rule) is left to the report, as is any source whose counts do not describe
    as many verdicts as ``data`` has. MET/UNMET rubrics only."""
    sides, voters = count_sides(sessions, data)
    keys = list(sides)
    rows = None
    if judges is not None and kept_judges_fit(data, judges, keys, voters):
        rows = agreement_judge_counts.combined_rows(
            sessions, judges, [sides[k] for k in keys], voters)
    if rows is None and keys:
        with sessions() as session:
            rows = session.execute(patterns_query([sides[k] for k in keys], voters)).all()
    return counts_from_rows(data, keys, voters, rows or [])


def count_sides(sessions: SessionFactory, data: AgreementData
                ) -> tuple[dict[str, Select], list[int]]:
    """The queries of ``data``'s verdict sources the count reads, in the report's order
    (not a panel whose stored decisions are not all the ones read), and the positions of
    alpha's voters among them (not panels)."""
    sides: dict[str, Select] = {}
    with sessions() as session:
        for source in data.verdict_sources:
            if source.is_panel and panels.unsettled(session, source.panel_id):
                continue
            if (side := side_of(data, source.key)) is not None:
                sides[source.key] = side
    voters = [i for i, key in enumerate(sides) if not data.source(key).is_panel]
    return sides, voters


def counts_from_rows(data: AgreementData, keys: Sequence[str], voters: Sequence[int],
                     rows: Iterable[Sequence]) -> ReportCounts:
    """``report_counts`` from the pattern rows of the sources ``keys`` (``patterns_query``'s,
    however they were made)."""
    return counts_from_folded(data, keys, FoldedRows.of(rows, len(keys), voters))


def counts_from_folded(data: AgreementData, keys: Sequence[str],
                       folded: FoldedRows) -> ReportCounts:
    """``counts_from_rows`` from the rows folded (``FoldedRows``): the rows of units where
    the voters disagree are one per unit, already in the order alpha sums them, and the
    pairs are summed per pattern."""
    criteria = [c.id for c in data.criteria]
    width, voters = len(keys), list(folded.voters)
    verdicts: list[Counter[int]] = [Counter() for _ in keys]  # per source, per criterion
    pairs: dict[tuple[int, int], CountsByCriterion] = {
        (a, b): {} for a, b in combinations(range(width), 2)}
    alpha_totals: dict[int, Counter[str]] = {}
    coded = folded.coded
    patterns: Counter[tuple[int, tuple[Verdict | None, ...]]] = Counter()
    for (cid, codes), n in coded.items():
        found = [DECODE[c] for c in codes]
        patterns[cid, tuple(found)] += n
        for i, verdict in enumerate(found):
            if verdict is not None:
                verdicts[i][cid] += n
        for (a, b), counts in pairs.items():
            if found[a] is not None or found[b] is not None:
                if cid not in counts:
                    counts[cid] = Counter()
                counts[cid][found[a], found[b]] += n
        cast_by_voters = [found[i] for i in voters if found[i] is not None]
        if cast_by_voters:
            met = cast_by_voters.count(Verdict.MET)
            unmet = cast_by_voters.count(Verdict.UNMET)
            totals = alpha_totals.setdefault(cid, Counter())
            totals["units"] += n
            totals["ca"] += n * (len(cast_by_voters) - met - unmet)
            if met + unmet >= 2:
                totals["pairable"] += n
                totals["values"] += n * (met + unmet)
                totals["met"] += n * met
    totals = {key: verdicts[i].total() for i, key in enumerate(keys)}
    # Complete data: the counts must describe as many verdicts as it holds. Else the
    # judges' counts are the database's (``agreement_sources.with_counts``).
    fits = {key: totals[key] == data.count_of(key)
            or (not data.complete and not data.source(key).is_human) for key in keys}
    pairwise = {(keys[a], keys[b]): compare_counts_by_criterion(_every_criterion(criteria, found))
                for (a, b), found in pairs.items() if fits[keys[a]] and fits[keys[b]]
                and totals[keys[a]] and totals[keys[b]]}
    every_voter = [s.key for s in data.verdict_sources if not s.is_panel]
    counted_voters = [i for i in voters if totals[keys[i]]]
    alpha = None
    if counted_voters and all(fits.get(key) for key in every_voter):
        alpha = _alpha(len(counted_voters), criteria, alpha_totals, folded)
    return ReportCounts(
        pairwise=pairwise, alpha=alpha,
        totals={key: n for key, n in totals.items() if fits[key]},
        patterns=VerdictPatterns(keys=tuple(keys), counts=dict(patterns)))


def _alpha(sources: int, criteria: Sequence[int], totals: dict[int, Counter[str]],
           folded: FoldedRows) -> MultiSourceAgreementByCriterion:
    """Alpha over every key and per criterion from the patterns' sums; the units where the
    sources disagree are summed in the order ``krippendorff_alpha_by_criterion`` meets them
    (the first source's keys first, in its order: ``FoldedRows``), so the floats are the
    same."""

    def alpha(units_in: Sequence[int], ordered: Iterable[tuple[int, int]]
              ) -> MultiSourceAgreement:
        summed: Counter[str] = Counter()
        for cid in units_in:
            summed.update(totals.get(cid, Counter()))
        return alpha_from_counts(
            sources=sources, units=summed["units"], pairable_units=summed["pairable"],
            values_used=summed["values"], met=summed["met"],
            excluded_cannot_assess=summed["ca"],
            disagreeing=ordered)

    per_criterion = {cid: alpha([cid], folded.met_unmet(cid)) for cid in criteria}
    return MultiSourceAgreementByCriterion(overall=alpha(criteria, folded.met_unmet()),
                                           per_criterion=per_criterion)


def _every_criterion(criteria: Iterable[int], found: CountsByCriterion) -> CountsByCriterion:
    return {cid: found.get(cid, Counter()) for cid in criteria}
