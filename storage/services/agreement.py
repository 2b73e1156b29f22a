"""How far the judges agree with each other and with the reviewers, for a rubric version x dataset.

The inputs come from storage.services.agreement_sources; every number comes from
``grading.agreement`` and ``grading.score_agreement``; this module only orders the results.

Human is always source A (the reference) when present, so confusion-matrix rows are the human
verdicts and a positive mean signed difference means the judge scores higher than people.
Holistic (rubric-as-judge) runs give no per-criterion verdicts: they take part in the score
comparisons and the cost table, not in the verdict metrics.

Multi-choice criteria (a criterion with ``options``): their verdicts are option labels, and
their rows carry the figures of their scale (quadratic-weighted kappa and ordinal alpha, or
Cohen's kappa and nominal alpha: ``grading.option_agreement``); the overall figures pool the
binary criteria only (``grading.agreement_kinds``). ``criterion_kinds`` reads each criterion's
scale from its ``options`` and ``scale_type``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations

from grading.agreement import (
    AgreementByCriterion,
    MultiSourceAgreement,
    MultiSourceAgreementByCriterion,
    PairwiseAgreement,
)
from grading.agreement_kinds import (
    Kinds,
    alpha_by_criterion,
    compare_by_criterion,
    verdicts_differ,
)
from grading.option_agreement import (
    OptionMultiSourceAgreement,
    OptionPairwiseAgreement,
    OptionScale,
)
from grading.score_agreement import ScoreAgreement, compare_scores
from grading.types import Verdict
from storage.dto import CriterionInfo
from storage.engine import SessionFactory
from storage.services import agreement_counts, agreement_judge_counts

# The gathering half, re-exported: pages and the CLI import the whole API from here.
from storage.services.agreement_sources import (
    GRADER_LABELS,
    HUMAN,
    AgreementData,
    AgreementSource,
    Key,
    current_human_verdicts,
    data_stamp,
    gather_sources,
    reviewer_verdicts,
    run_label,
    with_counts,
)
from storage.services.score_column import ScoreColumn

__all__ = [
    "GRADER_LABELS", "HUMAN", "AgreementData", "AgreementReport", "AgreementSource",
    "CriterionAgreement", "Disagreement", "JudgeSummary", "Key", "ScorePoint",
    "agreement_report", "build_report", "criterion_kinds", "criterion_table",
    "current_human_verdicts",
    "data_stamp", "disagreements", "gather_sources", "reviewer_verdicts", "run_label",
]


@dataclass(frozen=True)
class JudgeSummary:
    """One run next to its cost: agreement with the humans, verdicts and scores."""

    source: AgreementSource
    verdicts_vs_human: PairwiseAgreement | None  # None for holistic runs or without reviews
    scores_vs_human: ScoreAgreement | None  # None without any human score


@dataclass(frozen=True)
class ScorePoint:
    source_key: str
    response_id: int
    judge_score: float
    human_score: float


@dataclass(frozen=True)
class CriterionAgreement:
    """One row of the per-criterion table, for one pair of sources or for all of them."""

    criterion: CriterionInfo
    # None in the all-sources table; the Option* figures for a multi-choice criterion
    pair: PairwiseAgreement | OptionPairwiseAgreement | None
    alpha: MultiSourceAgreement | OptionMultiSourceAgreement
    disagreements: int  # responses where the sources gave different verdicts (or options)


@dataclass(frozen=True)
class Disagreement:
    response_id: int
    response_label: str
    criterion_id: int
    criterion_label: str
    # source key -> verdict, or option label on a multi-choice criterion (None: no verdict)
    verdicts: dict[str, Verdict | str | None]
    reasons: dict[str, str]


@dataclass(frozen=True)
class AgreementReport:
    data: AgreementData
    # Every pair of verdict sources (a before b in data.sources order: Human is always a).
    pairwise: dict[tuple[str, str], AgreementByCriterion]
    alpha: MultiSourceAgreementByCriterion
    judges: tuple[JudgeSummary, ...]
    score_points: tuple[ScorePoint, ...]
    # The database's counts of verdict patterns, when the report was counted: the
    # disagreements per criterion of any sources without the judges' verdicts.
    patterns: agreement_counts.VerdictPatterns | None = field(default=None, compare=False)

    def pair(self, a: str, b: str) -> AgreementByCriterion | None:
        """The agreement of ``a`` and ``b`` in either order, as stored (a is the reference)."""
        return self.pairwise.get((a, b)) or self.pairwise.get((b, a))


def criterion_kinds(criteria: Sequence[CriterionInfo]) -> dict[int, OptionScale | None]:
    """Each criterion's option scale (None: binary), from its ``options`` and ``scale_type``
    when it has them."""
    return {c.id: OptionScale.of(c) for c in criteria}


def _by_criterion_id(data: AgreementData, result: dict) -> dict:
    """grading lists criteria in order of first appearance; use the rubric's order."""
    return {c.id: result[c.id] for c in data.criteria if c.id in result}


def _with_all_criteria(data: AgreementData, verdicts: dict[Key, Verdict]) -> dict[Key, Verdict]:
    # A criterion no source answered must still get a row: grading lists criteria from the
    # keys, so add a None-valued key for each (None is "no verdict" there).
    padded: dict[Key, Verdict | None] = {(-1, c.id): None for c in data.criteria}
    padded.update(verdicts)
    return padded  # type: ignore[return-value]


def _fits(data: AgreementData, a: str, b: str, counted: AgreementByCriterion) -> bool:
    """Counts made by the database describe the same verdicts as ``data``: every criterion in
    the rubric's order, and as many keys on each side (else the pair is computed here)."""
    shared = counted.overall.shared
    return (list(counted.per_criterion) == [c.id for c in data.criteria]
            and shared + counted.overall.only_in_a == data.count_of(a)
            and shared + counted.overall.only_in_b == data.count_of(b))


def build_report(
    data: AgreementData,
    counted: Mapping[tuple[str, str], AgreementByCriterion] | None = None,
    kinds: Kinds | None = None,
    alpha: MultiSourceAgreementByCriterion | None = None,
    patterns: agreement_counts.VerdictPatterns | None = None,
) -> AgreementReport:
    """Every pairwise comparison, Krippendorff's alpha across sources, and the judge table.

    ``counted``: pairs already computed from the database's counts
    (storage.services.agreement_counts), used where they fit ``data``; identical figures.
    ``alpha``: alpha across the non-panel sources from the same counts.
    They count MET/UNMET only, so they are not used when a criterion has options.
    ``kinds``: each criterion's option scale (default ``criterion_kinds(data.criteria)``).
    Data that is not ``complete`` needs every pair and alpha counted.
    """
    kinds = criterion_kinds(data.criteria) if kinds is None else kinds
    if any(kinds.values()):
        counted, alpha = None, None
    keys = [s.key for s in data.verdict_sources]
    padded: dict[str, dict[Key, Verdict]] = {}

    def padded_of(key: str) -> dict[Key, Verdict]:
        if not data.complete and key != HUMAN:
            raise ValueError(f"{key}'s verdicts were read for the reviewed responses only: "
                             "its figures must come from the database's counts")
        if key not in padded:
            padded[key] = _with_all_criteria(data, data.verdicts[key])
        return padded[key]

    pairwise = {}
    for a, b in combinations(keys, 2):
        found = (counted or {}).get((a, b))
        if found is not None and _fits(data, a, b, found):
            pairwise[a, b] = found
            continue
        result = compare_by_criterion(padded_of(a), padded_of(b), kinds)
        pairwise[a, b] = AgreementByCriterion(
            overall=result.overall, per_criterion=_by_criterion_id(data, result.per_criterion))
    # A panel is left out of alpha across sources: its verdicts come from its members, so
    # they would be counted twice. Panels take part in every pairwise comparison.
    voters = [k for k in keys if not data.source(k).is_panel]
    if alpha is None or list(alpha.per_criterion) != [c.id for c in data.criteria]:
        alpha = alpha_by_criterion([padded_of(k) for k in voters] if voters else [
            _with_all_criteria(data, {})], kinds)
        alpha = MultiSourceAgreementByCriterion(
            overall=alpha.overall, per_criterion=_by_criterion_id(data, alpha.per_criterion))

    has_human = any(s.is_human for s in data.sources)
    judges: list[JudgeSummary] = []
    points: list[ScorePoint] = []
    for source in data.sources:
        if source.is_human:
            continue
        vs_human = None
        if has_human and source.key in keys and HUMAN in keys:
            vs_human = pairwise[HUMAN, source.key].overall
        human = data.human_scores.get(source.key, {})
        judge, scores = _judge_vs_human(human, data.judge_scores.get(source.key, {}))
        judges.append(JudgeSummary(source=source, verdicts_vs_human=vs_human,
                                   scores_vs_human=scores))
        points.extend(
            ScorePoint(source_key=source.key, response_id=rid, judge_score=judge[rid],
                       human_score=human[rid])
            # the responses both scored, in order (not all of a judge's 100,000 sorted)
            for rid in sorted(rid for rid in human if rid in judge))
    return AgreementReport(data=data, pairwise=pairwise, alpha=alpha, judges=tuple(judges),
                           score_points=tuple(points), patterns=patterns)


def _judge_vs_human(human: Mapping, judge: Mapping) -> tuple[Mapping, ScoreAgreement | None]:
    """(the judge's scores to pair with people's, how they compare). A judge's column of
    every response (``ScoreColumn``) is read once for the responses people scored, and its
    count of scores comes from the column, not from turning its 100,000 scores into a list
    per comparison: the same figures as ``compare_scores`` on the whole column."""
    if not human:
        return judge, None
    if (not isinstance(judge, ScoreColumn) or not judge.all_finite()
            or not all(type(rid) is int for rid in human)):
        return judge, compare_scores(human, judge)
    paired = judge.of(human)
    found = compare_scores(human, paired)
    return paired, replace(found, only_in_b=len(judge) - found.pairs_used)


def agreement_report(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    judges: agreement_judge_counts.JudgePatterns | None = None,
) -> AgreementReport:
    """gather_sources + build_report: what the Agreement page shows.

    Every pair and alpha across sources come from the database's counts
    (storage.services.agreement_counts), and then the judges' verdicts are read only where
    people reviewed (``AgreementData.complete`` False). Every verdict is read and the
    figures computed from them where the counts cannot be used: a rubric with multi-choice
    criteria, a panel whose stored decisions are not all the ones read (those pairs only),
    or anything written while reading (the two reads may not describe the same verdicts).
    ``judges``: the judges' share of the count kept by the caller
    (``agreement_judge_counts.judge_patterns``); used while no judge's stamp has moved, so
    a saved verdict recounts only the reviewed responses.
    """
    before = data_stamp(sessions, rubric_version_id, dataset_id)
    if judges is not None and judges.stamp != agreement_judge_counts.judge_stamp(before):
        judges = None
    if agreement_counts.countable(sessions, rubric_version_id, dataset_id):
        data = gather_sources(sessions, rubric_version_id, dataset_id, complete=False,
                              judge_reasons=False)
        counted = agreement_counts.report_counts(sessions, data, judges)
        data = with_counts(data, counted.totals)
        # People who answered with no verdict in force (every key disputed): a judge's
        # baseline against people would need its verdicts, as there is no Human pair.
        people_pairs = not data.reviewer_verdicts or any(
            s.is_human for s in data.verdict_sources)
        if (counted.covers(data) and people_pairs
                and data_stamp(sessions, rubric_version_id, dataset_id) == before):
            return build_report(data, counted.pairwise, criterion_kinds(data.criteria),
                                alpha=counted.alpha, patterns=counted.patterns)
        before = data_stamp(sessions, rubric_version_id, dataset_id)
    data = gather_sources(sessions, rubric_version_id, dataset_id)
    kinds = criterion_kinds(data.criteria)
    if any(kinds.values()):  # the counts are of MET/UNMET: build_report would not use them
        return build_report(data, None, kinds)
    counted = agreement_counts.report_counts(sessions, data)
    if data_stamp(sessions, rubric_version_id, dataset_id) != before:
        return build_report(data, None, kinds)
    return build_report(data, counted.pairwise, kinds, alpha=counted.alpha)


def disagreements(
    data: AgreementData, source_keys: Sequence[str], criterion_id: int | None = None,
    kinds: Kinds | None = None,
) -> list[Disagreement]:
    """(response, criterion) pairs where these sources gave both MET and UNMET, or two
    different options of a multi-choice criterion.

    CANNOT_ASSESS, NA options and missing verdicts never count as disagreement, as in the
    metrics. ``data`` must be complete (``agreement_lists.disagreement_list`` reads a
    counted report's from the database).
    """
    if not data.complete:
        raise ValueError("the judges' verdicts were read for the reviewed responses only: "
                         "list disagreements with agreement_lists.disagreement_list")
    return listed_disagreements(data, source_keys, criterion_id, kinds)


def listed_disagreements(
    data: AgreementData, source_keys: Sequence[str], criterion_id: int | None = None,
    kinds: Kinds | None = None,
) -> list[Disagreement]:
    """``disagreements`` among the verdicts ``data`` holds, complete or not."""
    kinds = criterion_kinds(data.criteria) if kinds is None else kinds
    keys = list(source_keys)
    criteria = [c for c in data.criteria if criterion_id is None or c.id == criterion_id]
    found: list[Disagreement] = []
    for rid, label in data.response_labels.items():
        for criterion in criteria:
            key = (rid, criterion.id)
            verdicts = {k: data.verdicts.get(k, {}).get(key) for k in keys}
            if verdicts_differ(list(verdicts.values()), kinds.get(criterion.id)):
                found.append(Disagreement(
                    response_id=rid, response_label=label, criterion_id=criterion.id,
                    criterion_label=criterion.label, verdicts=verdicts,
                    reasons={k: data.reasons.get(k, {}).get(key, "") for k in keys},
                ))
    return found


def criterion_table(
    report: AgreementReport, a: str | None = None, b: str | None = None
) -> list[CriterionAgreement]:
    """Per criterion, worst first: by kappa of the pair a/b, or by alpha over all sources.

    A criterion whose metric is undefined comes after the ones with a value when every pair
    agreed (nothing to fix) and last when there are no pairs at all (nothing known).
    """
    data = report.data
    keys = [s.key for s in data.verdict_sources] if a is None or b is None else [a, b]
    pair = report.pair(a, b) if a is not None and b is not None else None
    counts: dict[int, int] = defaultdict(int)
    if report.patterns is not None and not data.complete:
        counts.update(report.patterns.disagreements(keys))
    else:
        for d in disagreements(data, keys):
            counts[d.criterion_id] += 1
    rows = [
        CriterionAgreement(
            criterion=c,
            pair=pair.per_criterion.get(c.id) if pair else None,
            alpha=report.alpha.per_criterion[c.id],
            disagreements=counts[c.id],
        )
        for c in data.criteria
    ]
    return sorted(rows, key=_worst_first)


def _worst_first(row: CriterionAgreement) -> tuple[int, float, float]:
    if row.pair is not None:
        value, agreement, pairs = (row.pair.cohens_kappa, row.pair.percent_agreement,
                                   row.pair.pairs_used)
    else:
        value, agreement, pairs = row.alpha.alpha, None, row.alpha.pairable_units
    if not pairs:
        return (2, 0.0, 0.0)
    if value is None:
        return (1, -(agreement or 0.0), 0.0)
    return (0, value, -row.disagreements)
