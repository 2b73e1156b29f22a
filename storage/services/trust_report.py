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
trust_judges (the judges' share of the report, which a caller keeps while only people's
verdicts change: ``judges_part``), trust_types (the frozen report), this one (the whole
report).
"""

from __future__ import annotations

from storage.engine import SessionFactory
from storage.services import (
    agreement,
    agreement_blind,
    agreement_lists,
    blindness,
    human_baseline,
)
from storage.services.agreement import AgreementReport
from storage.services.agreement_sources import HUMAN
from storage.services.blindness import Sight
from storage.services.human_baseline import HumanBaseline
from storage.services.trust_judge import people_of, prepare_trust
from storage.services.trust_judges import TrustJudges, judges_part
from storage.services.trust_reads import read_sample
from storage.services.trust_types import (
    SAMPLE_RULE,
    CriterionTrust,
    HumanRange,
    JudgeTrust,
    TrustReport,
)

__all__ = ["SAMPLE_RULE", "CriterionTrust", "JudgeTrust", "TrustJudges", "TrustReport",
           "build_trust", "judges_part", "trust_report"]


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
                baseline: HumanBaseline | None = None,
                judges: TrustJudges | None = None) -> TrustReport:
    """Every judge's trust figures from an agreement report (as its viewer may see it);
    ``baseline``: the human baseline of the same verdicts (None: no human range);
    ``judges``: the judges' share kept by the caller (``judges_part`` of a report at the
    same judges' stamp; made here when None or made for other judges)."""
    data = report.data
    part = (judges if judges is not None and judges.fits(report)
            else judges_part(sessions, report))
    sample, sample_size = read_sample(sessions, data, part.reads.population)
    humans = data.verdicts.get(HUMAN, {})
    # Figures over the reviewed responses share their own small set of draws.
    people = people_of(part.frame, humans, sample)
    ranges = human_ranges(baseline)
    pending = [prepare_trust(part.shares[judge.source.key], data, judge.source,
                             judge.verdicts_vs_human, part.frame, people,
                             ranges.get(judge.source.key, ()))
               for judge in report.judges if judge.source.key in part.shares]
    found = tuple(finish() for finish in pending)
    reviewed = {rid for rid, _cid in humans}
    notes = []
    if not sample_size:
        notes.append("No random sample is set for this review set (Review page, review set "
                     "settings): corrected estimates need one.")
    return TrustReport(
        rubric_version_id=data.rubric_version_id, dataset_id=data.dataset_id,
        sample_size=sample_size, sampled_reviewed=len(reviewed & sample),
        reviewed_outside_sample=len(reviewed - sample), judges=found,
        notes=tuple(notes), pairwise=part.reads.pairwise)
