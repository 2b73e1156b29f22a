"""How far to trust each judge of a rubric version x dataset, in one report.

Built on the agreement report (storage.services.agreement: the same verdicts, the same
human verdicts in force, calibrated runs' examples left out, the same blind view), plus three
reads made here with SQL: the responses' lengths (``length()`` in the database), the option
shuffles the runs recorded, and which responses the review set drew at random. Every
figure comes from ``grading.trust``; this module only gathers, aligns and words them.

What counts:
- **Corrected estimates** use people's verdicts only on responses of the review set's
  random sample (storage.services.review_sets.sample_ids, the draw the Review page puts
  first): the hard cases people reviewed outside it (judge disagreements, failures, picked
  by hand) are left out, and counted in ``reviewed_outside_sample``. A sampled response
  whose criterion is disputed (no verdict in force) or CANNOT_ASSESS is left out of that
  criterion's figure.
- **Stability**: a run that asked the judge several times per criterion (run setting
  ``samples``, grading.samples) is measured on its own stored samples (``grade_criteria.
  samples``; a replay from the cache replays the same distinct samples, so it still counts).
  Otherwise the samples are the runs of the same rubric version, dataset, model and grader
  (``samples``); a run that made no provider call (every answer replayed from the provider
  cache) measures nothing and is left out (``replayed``).
- **Length bias**: on every response the judge decided (association) and, where people
  reviewed, within the human verdict (controlled); the verdict sentence uses the controlled
  slope when there is one.
- **Position effect**: options of runs that shuffled them; criteria of one-shot runs that
  shuffled them (the criterion-order effect, storage.services.trust_positions).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import func, select

from grading.agreement import PairwiseAgreement
from grading.trust.criterion_order import OrderEffect
from grading.trust.figures import SharedDraws
from grading.trust.length_bias import LengthBias, prepare_slope
from grading.trust.position import PositionEffect, first_position_effect
from grading.trust.ppi import CorrectedMean, ppi_mean
from grading.trust.stability import NOISY_VARIANCE, Stability
from grading.trust.verdict import Named, verdict
from grading.types import Verdict
from storage import models as m
from storage.dto import CriterionInfo
from storage.engine import SessionFactory
from storage.repositories import results as results_repo
from storage.services import (
    agreement,
    agreement_blind,
    blindness,
    review_sets,
    trust_positions,
    trust_samples,
)
from storage.services.agreement import AgreementReport
from storage.services.agreement_sources import HUMAN, AgreementSource
from storage.services.blindness import Sight

SAMPLE_RULE = ("people's verdicts on the review set's random sample only; hard cases "
               "reviewed outside it are left out")


@dataclass(frozen=True)
class CriterionTrust:
    criterion_id: int
    label: str
    unit: str  # "MET rate" (binary) or "option value" (multi-choice)
    corrected: CorrectedMean
    stability: Stability | None  # None: fewer than two samples of this judge
    length_all: LengthBias  # every response the judge decided
    length_controlled: LengthBias  # reviewed responses, within the human verdict
    position: PositionEffect | None  # None: no shuffled options recorded
    criterion_order: OrderEffect | None = None  # None: criteria never shuffled (one-shot)


@dataclass(frozen=True)
class JudgeTrust:
    source_key: str
    label: str
    agreement: PairwiseAgreement | None  # vs the human verdict in force (agreement report)
    samples: tuple[int, ...]  # run ids counted as samples of this judge (itself included)
    replayed: tuple[int, ...]  # same judge, left out: every answer came from the cache
    criteria: tuple[CriterionTrust, ...]
    score: CorrectedMean  # the score (0-1 or raw, as the judge's scoring settings give it)
    cost_per_1000: float | None  # USD per 1,000 responses; None when no cost is known
    unpriced: int  # grades whose cost is unknown (left out of the cost)
    verdict: str
    # > 1: the run asked the judge this many times per criterion and its stability comes
    # from those samples (``samples`` is then the run alone)
    samples_per_criterion: int = 1

    @property
    def stability_measured(self) -> bool:
        return self.samples_per_criterion > 1 or len(self.samples) >= 2


@dataclass(frozen=True)
class TrustReport:
    rubric_version_id: int
    dataset_id: int
    sample_size: int  # the review set's random sample (0: none drawn)
    sampled_reviewed: int  # sampled responses with at least one human verdict in force
    reviewed_outside_sample: int  # reviewed responses left out of the corrected estimates
    judges: tuple[JudgeTrust, ...]
    rule: str = SAMPLE_RULE
    noisy_threshold: float = NOISY_VARIANCE
    notes: tuple[str, ...] = field(default_factory=tuple)

    def judge(self, key: str) -> JudgeTrust:
        return next(j for j in self.judges if j.source_key == key)


def trust_report(sessions: SessionFactory, rubric_version_id: int, dataset_id: int, *,
                 sight: Sight = blindness.EVERYTHING) -> TrustReport:
    """The agreement report as ``sight`` may see it, then ``build_trust`` on it."""
    report = agreement.agreement_report(sessions, rubric_version_id, dataset_id)
    if not sight.sees_all:
        report = agreement.build_report(agreement_blind.as_seen(report.data, sight))
    return build_trust(sessions, report)


def _value_map(criterion: CriterionInfo) -> dict[object, float]:
    """A verdict (or option label) -> its number: MET 1 / UNMET 0, an option's value.
    CANNOT_ASSESS and NA options are not in it (no value)."""
    if criterion.options is None:
        return {Verdict.MET: 1.0, Verdict.UNMET: 0.0}
    return {o.label: o.value for o in criterion.options if not o.na}


def _codes(criterion: CriterionInfo) -> tuple[dict[object, float], list[float]]:
    """Category codes for the stability figures and each code's value rescaled to [0, 1]
    (the noisy flag's variance)."""
    if criterion.options is None:
        return {Verdict.UNMET: 0, Verdict.MET: 1}, [0.0, 1.0]
    kept = [o for o in criterion.options if not o.na]
    low = min(o.value for o in kept)
    span = (max(o.value for o in kept) - low) or 1.0
    return {o.label: i for i, o in enumerate(kept)}, [(o.value - low) / span for o in kept]


def _code_matrix(verdicts, frame: _Frame):
    """responses x criteria array of category codes (``_codes``); -1 where no decided
    verdict. One pass over the verdicts, one dict lookup per verdict: the report reads
    every source this way (80,000 verdicts per run at 10,000 x 8)."""
    import numpy as np

    table, positions = frame.lookup, frame.positions
    rows, cols, codes = [], [], []
    for (rid, cid), choice in verdicts.items():
        hit = table.get((cid, choice))
        row = positions.get(rid)
        if hit is not None and row is not None:
            rows.append(row)
            cols.append(hit[0])
            codes.append(hit[1])
    found = np.full((len(positions), len(frame.columns)), -1, dtype=np.int32)
    found[rows, cols] = codes
    return found


def _values(codes, frame: _Frame):
    """A code matrix as values (MET 1 / UNMET 0, option values); NaN where no verdict."""
    import numpy as np

    found = np.full(codes.shape, np.nan)
    for j, values in enumerate(frame.values):
        column = codes[:, j]
        kept = column >= 0
        found[kept, j] = np.asarray(values)[column[kept]]
    return found


@dataclass(frozen=True)
class _Reads:
    lengths: dict[int, int]
    sample: frozenset[int]
    sample_size: int
    replayed: frozenset[int]
    shuffles: trust_positions.Shuffles
    # run asking several samples -> (samples per criterion, (response, criterion) -> choices)
    within: dict[int, tuple[int, dict[tuple[int, int], list]]] = field(default_factory=dict)
    listings: trust_positions.Listings = field(default_factory=dict)  # criterion order


def _read(sessions: SessionFactory, report: AgreementReport) -> _Reads:
    data = report.data
    run_ids = [s.run_id for s in data.sources if s.run_id is not None]
    options = {c.id: [o.label for o in c.options] for c in data.criteria if c.options}
    with sessions() as session:
        lengths = dict(session.execute(
            select(m.ResponseRow.id, func.length(m.ResponseRow.output))
            .where(m.ResponseRow.dataset_id == data.dataset_id)).all())
        settings = review_sets.settings_of(session, data.dataset_id, data.rubric_version_id)
        # the population the Review page draws its sample from (review_queue)
        ids = (results_repo.run_response_ids(session, run_ids) if run_ids
               else list(lengths))
        replayed = frozenset(session.scalars(
            select(m.RunJobStatsRow.run_id).where(
                m.RunJobStatsRow.run_id.in_(run_ids), m.RunJobStatsRow.provider_calls == 0,
                m.RunJobStatsRow.cache_hits > 0))) if run_ids else frozenset()
        shuffles, listings = trust_positions.read_positions(session, run_ids, options)
        within = trust_samples.within_samples(session, run_ids) if run_ids else {}
    sample = review_sets.sample_ids(data.dataset_id, data.rubric_version_id, sorted(ids),
                                    settings.sample_size)
    return _Reads(lengths=lengths, sample=frozenset(sample),
                  sample_size=settings.sample_size, replayed=replayed, shuffles=shuffles,
                  within=within, listings=listings)


def _sample_groups(report: AgreementReport, replayed: frozenset[int]
                   ) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Per run key: (runs that are samples of the same judge, same judge but replayed)."""
    groups: dict[tuple, list[AgreementSource]] = defaultdict(list)
    for s in report.data.sources:
        if s.run_id is not None and s.per_criterion:
            groups[s.grader, s.model].append(s)
    found = {}
    for members in groups.values():
        live = tuple(s.run_id for s in members if s.run_id not in replayed)
        gone = tuple(s.run_id for s in members if s.run_id in replayed)
        for s in members:
            found[s.key] = (live if s.run_id not in replayed else (s.run_id,), gone)
    return found


def build_trust(sessions: SessionFactory, report: AgreementReport) -> TrustReport:
    """Every judge's trust figures from an agreement report (as its viewer may see it)."""
    import numpy as np

    data = report.data
    reads = _read(sessions, report)
    ids = sorted(reads.lengths)
    codes = [_codes(c) for c in data.criteria]
    frame = _Frame(
        positions={rid: i for i, rid in enumerate(ids)},
        columns={c.id: j for j, c in enumerate(data.criteria)},
        lookup={(c.id, choice): (j, code) for j, c in enumerate(data.criteria)
                for choice, code in codes[j][0].items()},
        values=[[_value_map(c)[choice] for choice in codes[j][0]]
                for j, c in enumerate(data.criteria)],
        units=[units for _codes_of, units in codes],
        lengths=np.asarray([reads.lengths[r] or 0 for r in ids], dtype=float))
    humans = data.verdicts.get(HUMAN, {})
    frame.human = _values(_code_matrix(humans, frame), frame)
    frame.sample = np.zeros(len(ids), dtype=bool)
    frame.sample[[frame.positions[r] for r in reads.sample if r in frame.positions]] = True
    # Figures over every response share one set of draws, those over the reviewed ones
    # another (a few hundred responses: their own small draws).
    frame.draws = SharedDraws(len(ids))
    reviewed_rows = np.nonzero(~np.isnan(frame.human).all(axis=1))[0]
    frame.reviewed = {int(row): i for i, row in enumerate(reviewed_rows)}
    frame.reviewed_draws = SharedDraws(len(reviewed_rows))
    groups = _sample_groups(report, reads.replayed)
    stabilities: dict[tuple[int, ...], list] = {}
    pending = []
    for judge in report.judges:
        source = judge.source
        if not source.per_criterion or not data.verdicts.get(source.key):
            continue
        within = reads.within.get(source.run_id) if source.run_id is not None else None
        if within is not None:  # the run's own samples measure it; other runs are not needed
            pending.append(_prepare_judge(
                report, judge.verdicts_vs_human, source, reads, frame,
                {source.key: ((source.run_id,), ())},
                trust_samples.prepare_within(data, frame, source.key, *within), within[0]))
            continue
        samples, _gone = groups.get(source.key, ((), ()))
        if len(samples) >= 2 and samples not in stabilities:
            stabilities[samples] = _prepare_stability(data, frame, samples)
        pending.append(_prepare_judge(report, judge.verdicts_vs_human, source, reads, frame,
                                      groups, stabilities.get(samples)))
    judges = tuple(finish() for finish in pending)
    reviewed = {rid for rid, _cid in humans}
    notes = []
    if not reads.sample_size:
        notes.append("No random sample is set for this review set (Review page, review set "
                     "settings): corrected estimates need one.")
    return TrustReport(
        rubric_version_id=data.rubric_version_id, dataset_id=data.dataset_id,
        sample_size=reads.sample_size, sampled_reviewed=len(reviewed & reads.sample),
        reviewed_outside_sample=len(reviewed - reads.sample), judges=judges,
        notes=tuple(notes))


@dataclass
class _Frame:
    """The report's responses and criteria as arrays: row = response, column = criterion."""

    positions: dict[int, int]
    columns: dict[int, int]
    lookup: dict[tuple[int, object], tuple[int, int]]  # (criterion, choice) -> (column, code)
    values: list[list[float]]  # per column, each code's value
    units: list[list[float]]  # per column, each code's value rescaled to [0, 1]
    lengths: object
    matrices: dict[str, object] = field(default_factory=dict)
    human: object = None
    sample: object = None
    draws: SharedDraws | None = None
    reviewed: dict[int, int] = field(default_factory=dict)
    reviewed_draws: SharedDraws | None = None


def _codes_of(data, frame: _Frame, key: str):
    """A source's code matrix, made once per report."""
    if key not in frame.matrices:
        frame.matrices[key] = _code_matrix(data.verdicts.get(key, {}), frame)
    return frame.matrices[key]


def _prepare_stability(data, frame: _Frame, samples: tuple[int, ...]) -> list:
    """Per criterion, the stability figures of these runs (computed once per judge)."""
    import numpy as np

    return trust_samples.by_criterion(frame, np.stack(
        [_codes_of(data, frame, f"run:{rid}") for rid in samples], axis=2))


def _prepare_judge(report, vs_human, source, reads: _Reads, frame: _Frame, groups,
                   stability: list | None, per_criterion: int = 1
                   ) -> Callable[[], JudgeTrust]:
    import numpy as np

    data = report.data
    judged = _values(_codes_of(data, frame, source.key), frame)
    samples, replayed = groups.get(source.key, ((), ()))
    finishers = []
    for criterion, j in frame.columns.items():
        f, y = judged[:, j], frame.human[:, j]
        has_f, has_y = ~np.isnan(f), ~np.isnan(y)
        in_sample = has_f & has_y & frame.sample
        corrected = ppi_mean(f[has_f].tolist(), f[in_sample].tolist(), y[in_sample].tolist())
        rows = np.nonzero(has_f)[0]
        length_all = prepare_slope(frame.lengths[rows], f[rows], None, draws=frame.draws,
                                   rows=rows)
        both = np.nonzero(has_f & has_y)[0]
        length_controlled = prepare_slope(
            frame.lengths[both], f[both], y[both].tolist(), draws=frame.reviewed_draws,
            rows=[frame.reviewed[int(r)] for r in both])
        shuffled = (reads.shuffles.get(source.run_id, {}).get(criterion)
                    if source.run_id is not None else None)
        position = first_position_effect(shuffled) if shuffled else None
        order = trust_positions.order_effect_of(
            reads.listings.get(source.run_id, {}).get(criterion), f, frame.positions,
            len(frame.columns))
        finishers.append((criterion, corrected, length_all, length_controlled,
                          stability[j] if stability else None, position, order))
    score = _corrected_score(data, source.key, reads.sample)
    labels = {c.id: c for c in data.criteria}

    def finish() -> JudgeTrust:
        rows = tuple(
            CriterionTrust(
                criterion_id=cid, label=labels[cid].label,
                unit="MET rate" if labels[cid].options is None else "option value",
                corrected=corrected, stability=stab() if stab else None,
                length_all=la(), length_controlled=lc(), position=pos, criterion_order=order)
            for cid, corrected, la, lc, stab, pos, order in finishers)
        return JudgeTrust(
            source_key=source.key, label=source.label, agreement=vs_human,
            samples=samples, replayed=replayed, samples_per_criterion=per_criterion,
            criteria=rows, score=score,
            cost_per_1000=(None if source.cost_per_grade is None
                           else source.cost_per_grade * 1000),
            unpriced=source.unknown_cost_count,
            verdict=_sentence(vs_human, max(len(samples), per_criterion), rows))

    return finish


def _corrected_score(data, key: str, sample: frozenset[int]) -> CorrectedMean:
    judge = data.judge_scores.get(key, {})
    human = data.human_scores.get(key, {})
    both = [rid for rid in sorted(judge) if rid in human and rid in sample]
    return ppi_mean(list(judge.values()), [judge[r] for r in both], [human[r] for r in both])


def _sentence(vs_human: PairwiseAgreement | None, samples: int, rows) -> str:
    said = None
    if vs_human is not None and vs_human.cohens_kappa is not None:
        said = (f"agrees with people at κ {vs_human.cohens_kappa:.2f} "
                f"(n={vs_human.pairs_used})")
    measured = [r for r in rows if r.stability is not None
                and r.stability.flip_rate.n > 0]
    slopes = []
    for r in rows:
        if r.length_controlled.slope.value is not None:
            slopes.append(Named(r.label, r.length_controlled.slope, r.unit))
        elif r.length_all.slope.value is not None:
            slopes.append(Named(f"{r.label} (not controlled for quality)",
                                r.length_all.slope, r.unit))
    return verdict(
        agreement=said, samples=samples,
        noisy=[r.label for r in measured if r.stability.noisy],
        stability_measured=len(measured), slopes=slopes,
        positions=[Named(r.label, r.position.excess) for r in rows if r.position],
        orders=[Named(r.label, r.criterion_order.late_minus_early, r.unit)
                for r in rows if r.criterion_order])
