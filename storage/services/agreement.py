"""How far the judges agree with each other and with the reviewers, for a rubric version x dataset.

Sources are each run's judge verdicts keyed by ``(response_id, criterion_id)`` and the current
human verdicts ("Human"). Every number comes from ``grading.agreement`` and
``grading.score_agreement``; this module only gathers the inputs and orders the results.

Human is always source A (the reference) when present, so confusion-matrix rows are the human
verdicts and a positive mean signed difference means the judge scores higher than people.
Holistic (rubric-as-judge) runs give no per-criterion verdicts: they take part in the score
comparisons and the cost table, not in the verdict metrics.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from grading.agreement import (
    AgreementByCriterion,
    MultiSourceAgreement,
    MultiSourceAgreementByCriterion,
    PairwiseAgreement,
    compare_verdicts_by_criterion,
    krippendorff_alpha_by_criterion,
)
from grading.score_agreement import ScoreAgreement, compare_scores
from grading.types import ToGradeInput, Verdict
from storage import models as m
from storage.convert import criterion_info, run_info
from storage.dto import CriterionInfo, HumanVerdictInfo, RunInfo
from storage.effective import compute_human_score
from storage.engine import SessionFactory
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as run_repo
from storage.repositories import verdicts as verdict_repo
from storage.services import calibration, consensus
from storage.services.panel_results import member_models, panel_label, panel_sources

HUMAN = "human"
GRADER_LABELS = {
    "per_criterion": "per-criterion",
    "one_shot": "one-shot",
    "rubric_as_judge": "rubric-as-judge",
}

Key = tuple[int, int]  # (response_id, criterion_id)


@dataclass(frozen=True)
class AgreementSource:
    """One source of verdicts and/or scores: a run, or the human reviewers."""

    key: str  # "run:<id>", "panel:<id>" or "human"
    label: str
    run_id: int | None
    grader: str | None
    model: str | None
    status: str | None
    per_criterion: bool  # False for holistic runs: no per-criterion verdicts
    verdict_count: int
    grades: int
    failed: int
    total_tokens: int
    cost: float | None  # sum of known costs; None when no grade's cost is known
    unknown_cost_count: int
    # A judge panel (storage.services.panels): its member runs' ids, in order.
    panel_id: int | None = None
    member_run_ids: tuple[int, ...] = ()

    @property
    def is_human(self) -> bool:
        return self.key == HUMAN

    @property
    def is_panel(self) -> bool:
        return self.panel_id is not None

    @property
    def tokens_per_grade(self) -> float | None:
        return self.total_tokens / self.grades if self.grades else None

    @property
    def cost_per_grade(self) -> float | None:
        priced = self.grades - self.unknown_cost_count
        return self.cost / priced if self.cost is not None and priced > 0 else None


@dataclass(frozen=True)
class AgreementData:
    """Everything the metrics need, gathered in one read; plain values only (picklable)."""

    rubric_version_id: int
    dataset_id: int
    criteria: tuple[CriterionInfo, ...]
    response_labels: dict[int, str]  # response id -> external id, or "#<id>"
    sources: tuple[AgreementSource, ...]  # Human first (when reviewed), then runs by id
    verdicts: dict[str, dict[Key, Verdict]]  # source key -> verdicts
    reasons: dict[str, dict[Key, str]]  # judge reasons and human notes, for disagreements
    judge_scores: dict[str, dict[int, float]]  # run key -> response -> the judge's own score
    # run key -> response -> human score under that run's scoring settings, so that a run
    # with normalize off is compared with a raw human score, not a normalized one.
    human_scores: dict[str, dict[int, float]]
    reviewed_responses: int  # with at least one human verdict
    fully_reviewed_responses: int  # every criterion reviewed
    # Each reviewer's own current verdicts (reviewer key -> verdicts), their names, and the
    # seconds they took per response (the longest save of each response), for the baseline.
    reviewer_verdicts: dict[str, dict[Key, Verdict]] = field(default_factory=dict)
    reviewer_names: dict[str, str] = field(default_factory=dict)
    reviewer_seconds: dict[str, dict[int, float]] = field(default_factory=dict)
    # Calibrated runs (run key -> HeldOut): their verdicts and scores above leave out the
    # responses they showed as examples.
    held_out: dict[str, calibration.HeldOut] = field(default_factory=dict)

    def source(self, key: str) -> AgreementSource:
        return next(s for s in self.sources if s.key == key)

    @property
    def verdict_sources(self) -> tuple[AgreementSource, ...]:
        return tuple(s for s in self.sources if s.per_criterion and self.verdicts.get(s.key))

    def criterion_label(self, criterion_id: int) -> str:
        return next(c.label for c in self.criteria if c.id == criterion_id)


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
    pair: PairwiseAgreement | None  # None in the all-sources table
    alpha: MultiSourceAgreement
    disagreements: int  # responses where the sources gave different MET/UNMET verdicts


@dataclass(frozen=True)
class Disagreement:
    response_id: int
    response_label: str
    criterion_id: int
    criterion_label: str
    verdicts: dict[str, Verdict | None]  # source key -> verdict (None: no verdict)
    reasons: dict[str, str]


@dataclass(frozen=True)
class AgreementReport:
    data: AgreementData
    # Every pair of verdict sources (a before b in data.sources order: Human is always a).
    pairwise: dict[tuple[str, str], AgreementByCriterion]
    alpha: MultiSourceAgreementByCriterion
    judges: tuple[JudgeSummary, ...]
    score_points: tuple[ScorePoint, ...]

    def pair(self, a: str, b: str) -> AgreementByCriterion | None:
        """The agreement of ``a`` and ``b`` in either order, as stored (a is the reference)."""
        return self.pairwise.get((a, b)) or self.pairwise.get((b, a))


def run_label(run: RunInfo) -> str:
    name = f" {run.name}" if run.name else ""
    calibrated = (f" · calibrated (k={run.settings.calibration.k})"
                  if run.settings.calibration is not None else "")
    return (f"#{run.id}{name} · {GRADER_LABELS.get(run.grader, run.grader)} · {run.model}"
            + calibrated)


def gather_sources(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int
) -> AgreementData:
    """Each run's judge verdicts and scores, the human verdicts and scores, tokens and cost.

    Read as rows, not ORM instances, in a handful of queries: 2,000 responses x 3 runs x
    8 criteria is about 50,000 verdicts.
    """
    with sessions() as session:
        version = rubric_repo.get_version(session, rubric_version_id)
        criteria = tuple(criterion_info(c) for c in version.criteria)
        dataset_repo.get_dataset(session, dataset_id)
        labels = {
            rid: external or f"#{rid}"
            for rid, external in session.execute(
                select(m.ResponseRow.id, m.ResponseRow.external_id)
                .where(m.ResponseRow.dataset_id == dataset_id).order_by(m.ResponseRow.id))
        }
        runs = [run_info(r) for r in run_repo.list_runs(
            session, rubric_version_id=rubric_version_id, dataset_id=dataset_id)]
        grades = {run.id: run_repo.grade_infos_for_run(session, run.id) for run in runs}
        # A calibrated run is measured only on the responses it did not show as examples.
        used = calibration.example_response_ids(
            session, [run.id for run in runs if run.settings.calibration is not None])
        humans = current_human_verdicts(session, rubric_version_id, dataset_id)
        own = reviewer_verdicts(session, rubric_version_id, dataset_id)
        reviewed = sorted({h.response_id for h in humans})
        by_response: dict[int, dict[int, HumanVerdictInfo]] = defaultdict(dict)
        for h in humans:
            by_response[h.response_id][h.criterion_id] = h
        complete = [rid for rid in reviewed if len(by_response[rid]) == len(criteria)]
        needs_text = any(run.settings.length_penalty is not None for run in runs)
        texts = _texts(session, complete) if needs_text else {}

    verdicts: dict[str, dict[Key, Verdict]] = {}
    reasons: dict[str, dict[Key, str]] = {}
    judge_scores: dict[str, dict[int, float]] = {}
    sources: list[AgreementSource] = []
    for run in runs:
        key = f"run:{run.id}"
        verdicts[key], reasons[key], judge_scores[key] = {}, {}, {}
        for grade in grades[run.id]:
            if grade.response_id in used.get(run.id, ()):
                continue
            if grade.score is not None:
                judge_scores[key][grade.response_id] = grade.score
            for item in grade.criteria:
                if item.verdict is not None:
                    verdicts[key][grade.response_id, item.criterion_id] = item.verdict
                    reasons[key][grade.response_id, item.criterion_id] = item.reason
        graded = len(grades[run.id])
        sources.append(AgreementSource(
            key=key, label=run_label(run), run_id=run.id, grader=run.grader,
            model=run.model, status=run.status,
            per_criterion=run.grader != "rubric_as_judge", verdict_count=len(verdicts[key]),
            grades=graded, failed=run.failed_count, total_tokens=run.total_tokens,
            cost=None if graded and run.unknown_cost_count >= graded else run.cost,
            unknown_cost_count=run.unknown_cost_count,
        ))

    scorings = {f"run:{run.id}": run.settings.scoring() for run in runs}
    panel_used: dict[str, tuple[int, set[int]]] = {}
    for found in panel_sources(sessions, rubric_version_id, dataset_id):
        panel, key = found.panel, f"panel:{found.panel.id}"
        # A panel with calibrated members is measured only where no member was shown the
        # response as an example (a member's example would leak people's verdict into it).
        shown = set().union(*(used.get(m.run.id, set()) for m in panel.members))
        verdicts[key] = {k: v for k, v in found.verdicts.items() if k[0] not in shown}
        reasons[key] = {k: v for k, v in found.reasons.items() if k[0] not in shown}
        judge_scores[key] = {r: v for r, v in found.scores.items() if r not in shown}
        ks = [m.run.settings.calibration.k for m in panel.members
              if m.run.settings.calibration is not None]
        if ks:
            panel_used[key] = (max(ks), shown)
        scorings[key] = panel.scoring
        sources.append(AgreementSource(
            key=key, label=panel_label(panel),
            run_id=None, grader="panel", model=member_models(panel), status=found.status,
            per_criterion=True, verdict_count=len(verdicts[key]), grades=found.grades,
            failed=0, total_tokens=found.total_tokens, cost=found.cost,
            unknown_cost_count=found.unknown_cost_count, panel_id=panel.id,
            member_run_ids=tuple(m.run.id for m in panel.members)))
        needs_text = needs_text or panel.scoring.length_penalty is not None
    if needs_text and not texts:
        with sessions() as session:
            texts = _texts(session, complete)

    verdicts[HUMAN] = {(h.response_id, h.criterion_id): h.verdict for h in humans}
    reasons[HUMAN] = {(h.response_id, h.criterion_id): h.note for h in humans}
    if humans:
        sources.insert(0, AgreementSource(
            key=HUMAN, label="Human", run_id=None, grader=None, model=None, status=None,
            per_criterion=True, verdict_count=len(humans), grades=0, failed=0,
            total_tokens=0, cost=None, unknown_cost_count=0,
        ))

    # The human score of a response under each run's own scoring settings (normalize,
    # CANNOT_ASSESS strategy, length penalty), through the same function as
    # storage.services.reviews.human_scores.
    human_scores: dict[str, dict[int, float]] = {}
    by_settings: dict[str, dict[int, float]] = {}
    for source_key, scoring in scorings.items():
        cache_key = scoring.model_dump_json()
        if cache_key not in by_settings:
            by_settings[cache_key] = {}
            for rid in complete:
                result = compute_human_score(
                    response_id=rid, rubric_version_id=rubric_version_id, criteria=criteria,
                    humans=by_response[rid], settings=scoring, to_grade=texts.get(rid))
                if result.score is not None:
                    by_settings[cache_key][rid] = result.score
        human_scores[source_key] = by_settings[cache_key]

    per_reviewer: dict[str, dict[Key, Verdict]] = defaultdict(dict)
    names: dict[str, str] = {}
    seconds: dict[str, dict[int, float]] = defaultdict(dict)
    for h in own:
        per_reviewer[h.reviewer_key][h.response_id, h.criterion_id] = h.verdict
        names[h.reviewer_key] = h.reviewer
        if h.review_seconds is not None:
            spent = seconds[h.reviewer_key]
            spent[h.response_id] = max(spent.get(h.response_id, 0.0), h.review_seconds)
    held_out = {
        f"run:{run.id}": calibration.HeldOut.of(
            run.settings.calibration.k, set(reviewed), used.get(run.id, set()))
        for run in runs if run.settings.calibration is not None}
    held_out.update({key: calibration.HeldOut.of(k, set(reviewed), shown)
                     for key, (k, shown) in panel_used.items()})
    return AgreementData(
        held_out=held_out,
        rubric_version_id=rubric_version_id, dataset_id=dataset_id, criteria=criteria,
        response_labels=labels, sources=tuple(sources), verdicts=verdicts, reasons=reasons,
        judge_scores=judge_scores, human_scores=human_scores,
        reviewed_responses=len(reviewed), fully_reviewed_responses=len(complete),
        reviewer_verdicts=dict(per_reviewer), reviewer_names=names,
        reviewer_seconds=dict(seconds),
    )


def current_human_verdicts(
    session: Session, rubric_version_id: int, dataset_id: int
) -> list[HumanVerdictInfo]:
    """The human verdict in force (adjudicated, or agreed by every reviewer who answered) of
    every decided (response, criterion), carried-over verdicts included; disputed criteria
    have none (storage.services.consensus)."""
    sources = verdict_repo.carry_sources(session, rubric_version_id)
    ids = verdict_repo.dataset_response_ids_with_verdicts(session, dataset_id, list(sources))
    found = consensus.decisions(session, ids, rubric_version_id)
    return [
        decision.applied
        for rid in sorted(found) for cid, decision in sorted(found[rid].items())
        if decision.applied is not None
    ]


def reviewer_verdicts(
    session: Session, rubric_version_id: int, dataset_id: int
) -> list[HumanVerdictInfo]:
    """Every reviewer's own current verdict (not adjudications), carried-over included."""
    sources = verdict_repo.carry_sources(session, rubric_version_id)
    ids = verdict_repo.dataset_response_ids_with_verdicts(session, dataset_id, list(sources))
    reviews, _adj, _numbers, _v = consensus.gather(session, ids, rubric_version_id)
    return [h for rid in sorted(reviews) for cid in sorted(reviews[rid])
            for h in reviews[rid][cid]]


def _texts(session: Session, response_ids: list[int]) -> dict[int, ToGradeInput]:
    # Only read the (possibly large) texts when a length penalty needs them.
    found: dict[int, ToGradeInput] = {}
    for start in range(0, len(response_ids), 500):
        for rid, output, thinking in session.execute(
            select(m.ResponseRow.id, m.ResponseRow.output, m.ResponseRow.thinking)
            .where(m.ResponseRow.id.in_(response_ids[start:start + 500]))
        ):
            # Passed as parts: an uploaded output is never re-parsed for <output> tags.
            found[rid] = {"thinking": thinking or "", "output": output}
    return found


def _by_criterion_id(data: AgreementData, result: dict) -> dict:
    """grading lists criteria in order of first appearance; use the rubric's order."""
    return {c.id: result[c.id] for c in data.criteria if c.id in result}


def _with_all_criteria(data: AgreementData, verdicts: dict[Key, Verdict]) -> dict[Key, Verdict]:
    # A criterion no source answered must still get a row: grading lists criteria from the
    # keys, so add a None-valued key for each (None is "no verdict" there).
    padded: dict[Key, Verdict | None] = {(-1, c.id): None for c in data.criteria}
    padded.update(verdicts)
    return padded  # type: ignore[return-value]


def build_report(data: AgreementData) -> AgreementReport:
    """Every pairwise comparison, Krippendorff's alpha across sources, and the judge table."""
    keys = [s.key for s in data.verdict_sources]
    padded = {k: _with_all_criteria(data, data.verdicts[k]) for k in keys}
    pairwise = {}
    for a, b in combinations(keys, 2):
        result = compare_verdicts_by_criterion(padded[a], padded[b])
        pairwise[a, b] = AgreementByCriterion(
            overall=result.overall, per_criterion=_by_criterion_id(data, result.per_criterion))
    # A panel is left out of alpha across sources: its verdicts come from its members, so
    # they would be counted twice. Panels take part in every pairwise comparison.
    voters = [k for k in keys if not data.source(k).is_panel]
    alpha = krippendorff_alpha_by_criterion([padded[k] for k in voters] if voters else [
        _with_all_criteria(data, {})])
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
        judge = data.judge_scores.get(source.key, {})
        scores = compare_scores(human, judge) if human else None
        judges.append(JudgeSummary(source=source, verdicts_vs_human=vs_human,
                                   scores_vs_human=scores))
        points.extend(
            ScorePoint(source_key=source.key, response_id=rid, judge_score=judge[rid],
                       human_score=human[rid])
            for rid in sorted(judge) if rid in human)
    return AgreementReport(data=data, pairwise=pairwise, alpha=alpha, judges=tuple(judges),
                           score_points=tuple(points))


def agreement_report(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int
) -> AgreementReport:
    """gather_sources + build_report: what the Agreement page shows."""
    return build_report(gather_sources(sessions, rubric_version_id, dataset_id))


def _differ(verdicts: Sequence[Verdict | None]) -> bool:
    decided = {v for v in verdicts if v in (Verdict.MET, Verdict.UNMET)}
    return len(decided) > 1


def disagreements(
    data: AgreementData, source_keys: Sequence[str], criterion_id: int | None = None
) -> list[Disagreement]:
    """(response, criterion) pairs where these sources gave both MET and UNMET.

    CANNOT_ASSESS and missing verdicts never count as disagreement, as in the metrics.
    """
    keys = list(source_keys)
    criteria = [c for c in data.criteria if criterion_id is None or c.id == criterion_id]
    found: list[Disagreement] = []
    for rid, label in data.response_labels.items():
        for criterion in criteria:
            key = (rid, criterion.id)
            verdicts = {k: data.verdicts.get(k, {}).get(key) for k in keys}
            if _differ(list(verdicts.values())):
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


def data_stamp(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int
) -> tuple[tuple[tuple[int, int, str], ...], tuple[int, int], tuple[int, ...]]:
    """A cheap fingerprint of what the report reads: each run's graded count and status,
    the number and newest id of the human verdicts, and the panels' ids. Cached readers key
    on it."""
    with sessions() as session:
        run_rows = session.execute(
            select(m.RunRow.id, m.RunRow.done_count + m.RunRow.failed_count, m.RunRow.status)
            .where(m.RunRow.rubric_version_id == rubric_version_id,
                   m.RunRow.dataset_id == dataset_id)
            .order_by(m.RunRow.id)).all()
        count, newest = session.execute(
            select(func.count(), func.max(m.HumanVerdictRow.id))
            .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
            # every version: verdicts on earlier versions carry into this one
            .where(m.ResponseRow.dataset_id == dataset_id)).one()
        panel_ids = tuple(session.scalars(
            select(m.PanelRow.id).where(m.PanelRow.rubric_version_id == rubric_version_id,
                                        m.PanelRow.dataset_id == dataset_id)
            .order_by(m.PanelRow.id)))
    return (tuple((rid, graded, status) for rid, graded, status in run_rows),
            (count or 0, newest or 0), panel_ids)
