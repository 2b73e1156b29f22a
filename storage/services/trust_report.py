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
- **A panel** (trust_panels): its samples are its members' samples combined by the panel's
  rule, sample by sample; its option-position and criterion-order effects pool its
  members' recorded shuffles (each member was shown its own order; option position counts
  each response once); no pairwise order (a comparison is judged by one model).
- **Length bias**: on every response the judge decided (association) and, where people
  reviewed, within the human verdict (controlled); the verdict sentence uses the controlled
  slope when there is one.
- **Position effect**: options of runs that shuffled them; criteria of one-shot runs that
  shuffled them (the criterion-order effect, storage.services.trust_positions).

Modules, by job: trust_reads (the database reads), trust_frame (verdicts as arrays),
trust_stored (a counted report's judge verdicts, read from the database as arrays: its data
holds the reviewed responses' only), trust_judge (one judge's figures and sentence),
trust_types (the frozen report), this one (the whole report).
"""

from __future__ import annotations

from grading.trust.figures import SharedDraws
from storage.engine import SessionFactory
from storage.services import (
    agreement,
    agreement_blind,
    agreement_lists,
    blindness,
    human_baseline,
    panels,
    trust_panels,
    trust_samples,
)
from storage.services.agreement import AgreementReport
from storage.services.agreement_sources import HUMAN
from storage.services.blindness import Sight
from storage.services.human_baseline import HumanBaseline
from storage.services.trust_frame import code_matrix, make_frame, values
from storage.services.trust_judge import prepare_judge, prepare_stability
from storage.services.trust_reads import read, sample_groups
from storage.services.trust_stored import StoredVerdicts
from storage.services.trust_types import (
    SAMPLE_RULE,
    CriterionTrust,
    HumanRange,
    JudgeTrust,
    TrustReport,
)

__all__ = ["SAMPLE_RULE", "CriterionTrust", "JudgeTrust", "TrustReport", "build_trust",
           "trust_report"]


def trust_report(sessions: SessionFactory, rubric_version_id: int, dataset_id: int, *,
                 sight: Sight = blindness.EVERYTHING) -> TrustReport:
    """The agreement report as ``sight`` may see it, then ``build_trust`` on it (with the
    human baseline of the same verdicts)."""
    report = agreement.agreement_report(sessions, rubric_version_id, dataset_id)
    if not sight.sees_all:
        report = agreement.build_report(agreement_blind.as_seen(
            agreement_lists.complete_data(sessions, report.data), sight))
    return build_trust(sessions, report, human_baseline.report_baseline(report))


def human_ranges(baseline: HumanBaseline | None) -> dict[str, tuple[HumanRange, ...]]:
    """Per judge, where it sits against the people's own range, per binary criterion."""
    found: dict[str, list[HumanRange]] = {}
    for row in baseline.criteria if baseline is not None else ():
        for judge in row.judges:
            found.setdefault(judge.source_key, []).append(HumanRange(
                criterion=row.criterion.label, position=judge.position,
                judge_f1=judge.loo_f1, people_f1=row.people_spread,
                reviewers=len(row.reviewers)))
    return {key: tuple(rows) for key, rows in found.items()}


def build_trust(sessions: SessionFactory, report: AgreementReport,
                baseline: HumanBaseline | None = None) -> TrustReport:
    """Every judge's trust figures from an agreement report (as its viewer may see it);
    ``baseline``: the human baseline of the same verdicts (None: no human range)."""
    import numpy as np

    data = report.data
    reads = read(sessions, report)
    ids = sorted(reads.lengths)
    frame = make_frame(data.criteria, reads.lengths)
    if not data.complete:  # the judges' verdicts over every response, as arrays
        frame.stored = StoredVerdicts(sessions, data)
    humans = data.verdicts.get(HUMAN, {})
    frame.human = values(code_matrix(humans, frame), frame)
    frame.sample = np.zeros(len(ids), dtype=bool)
    frame.sample[[frame.positions[r] for r in reads.sample if r in frame.positions]] = True
    # Figures over every response share one set of draws, those over the reviewed ones
    # another (a few hundred responses: their own small draws).
    frame.draws = SharedDraws(len(ids))
    reviewed_rows = np.nonzero(~np.isnan(frame.human).all(axis=1))[0]
    frame.reviewed = {int(row): i for i, row in enumerate(reviewed_rows)}
    frame.reviewed_draws = SharedDraws(len(reviewed_rows))
    groups = sample_groups(report, reads.replayed)
    stabilities: dict[tuple[int, ...], list] = {}
    ranges = human_ranges(baseline)
    pending = []
    for judge in report.judges:
        source = judge.source
        if not source.per_criterion or not data.count_of(source.key):
            continue
        within = reads.within.get(source.run_id) if source.run_id is not None else None
        if within is not None:  # the run's own samples measure it; other runs are not needed
            pending.append(prepare_judge(
                report, judge.verdicts_vs_human, source, reads, frame,
                {source.key: ((source.run_id,), ())},
                trust_samples.prepare_within(data, frame, source.key, within), within.count,
                human_range=ranges.get(source.key, ())))
            continue
        if source.is_panel:
            found = trust_panels.panel_samples(data, frame, reads, groups, source.key,
                                               panels.get_panel(sessions, source.panel_id))
            pending.append(prepare_judge(report, judge.verdicts_vs_human, source, reads,
                                         frame, groups, found.stability, found.count,
                                         found.basis, ranges.get(source.key, ())))
            continue
        samples, _gone = groups.get(source.key, ((), ()))
        if len(samples) >= 2 and samples not in stabilities:
            stabilities[samples] = prepare_stability(data, frame, samples)
        pending.append(prepare_judge(report, judge.verdicts_vs_human, source, reads, frame,
                                     groups, stabilities.get(samples),
                                     human_range=ranges.get(source.key, ())))
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
        notes=tuple(notes), pairwise=reads.pairwise)
