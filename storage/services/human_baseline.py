"""The human baseline: is a judge as good as a second person would be?

Per criterion:

- **Among reviewers**: Cohen's kappa when exactly two reviewers answered, Krippendorff's alpha
  when more did, pooled pairwise percent agreement, and n (responses with two or more
  reviewers' MET/UNMET verdicts).
- **Each judge vs the human verdict** (the decision in force: adjudicated or agreed).
- **Leave one reviewer out**: for each reviewer, the reference is the other reviewers' verdict
  on the responses they share (their majority; ties left out). The reviewer's macro-F1 against
  it gives one of "the people's figures" (with two reviewers both are the same number:
  macro-F1 is symmetric); the judge's macro-F1 against the very same reference and
  responses, averaged over the left-out reviewers, is compared with them (``decide``).

The comparison claims only what the 95% intervals support: ``baseline_decision``.

Per reviewer: verdicts given, median seconds per response, agreement with the final verdict.
Every metric comes from ``grading.agreement``; CANNOT_ASSESS is left out as there.

Multi-choice criteria (with options) are not in the baseline yet: their rows are left out
(``left_out`` names them) and the reviewers' agreement with the final verdict counts the
binary criteria only. Their agreement figures are in the Agreement report's rows.

Every figure has a 95% percentile bootstrap interval: the responses behind it are resampled
with replacement (``RESAMPLES`` times, seeded with ``SEED`` so the same data give the same
interval; all figures of a criterion share one set of draws) and the figure is computed on
each resample from its confusion counts (``grading.agreement.pair_scores``). None when the
figure has no value on most resamples (or there are fewer than two responses).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from statistics import median
from typing import Literal

from grading.agreement import (
    AgreementByCriterion,
    PairwiseAgreement,
    compare_verdicts,
    krippendorff_alpha,
)
from grading.bootstrap import Interval
from grading.types import Verdict
from storage.dto import CriterionInfo
from storage.services.agreement import AgreementReport, criterion_kinds
from storage.services.agreement_sources import HUMAN, AgreementData, Key
from storage.services.baseline_decision import MARGIN as MARGIN
from storage.services.baseline_decision import Figure as Figure
from storage.services.baseline_decision import Position as Position
from storage.services.baseline_decision import decide, people_n, people_spread, sentence
from storage.services.baseline_decision import n_span as n_span
from storage.services.baseline_resampler import ON_ARRAYS
from storage.services.baseline_resampler import RESAMPLES as RESAMPLES
from storage.services.baseline_resampler import SEED as SEED
from storage.services.baseline_resampler import Resampler as _Resampler
from storage.services.baseline_resampler import alpha_of as _alpha_of
from storage.services.baseline_resampler import alpha_units as _alpha_units
from storage.services.baseline_resampler import f1 as _f1
from storage.services.baseline_resampler import kappa as _kappa
from storage.services.baseline_resampler import mean_f1_interval as _mean_f1_interval
from storage.services.baseline_resampler import percent as _percent
from storage.services.baseline_resampler import pooled_pairs as _pooled_pairs
from storage.services.baseline_resampler import pooled_percent as _pooled_percent

# The statistics computed on every resample at once (a test empties it to compare them
# with one resample at a time).
_ON_ARRAYS = ON_ARRAYS



@dataclass(frozen=True)
class JudgeBaseline:
    source_key: str
    label: str
    vs_human: PairwiseAgreement  # against the human verdict in force
    loo_f1: Figure  # mean over left-out reviewers of the judge's macro-F1 vs the others
    position: Position
    sentence: str
    vs_human_kappa_interval: Interval | None = None
    vs_human_f1_interval: Interval | None = None
    needed: int | None = None  # "unclear": about how many responses would tell


@dataclass(frozen=True)
class CriterionBaseline:
    criterion: CriterionInfo
    reviewers: tuple[str, ...]  # keys of the reviewers who answered this criterion
    method: Literal["kappa", "alpha", "none"]
    among: Figure  # kappa (two reviewers) or alpha (more)
    percent: Figure  # pooled pairwise percent agreement among reviewers (0-100)
    people_f1: dict[str, Figure]  # reviewer key -> macro-F1 against the other reviewers
    judges: tuple[JudgeBaseline, ...]

    @property
    def people_range(self) -> tuple[float, float] | None:
        return _people_range(self.people_f1)

    @property
    def people_spread(self) -> str:
        """The reviewers' own figures as they are: ``0.75 [0.20, 1.00] (each of 2
        reviewers)`` or ``0.62, 0.80 (n=4–6)`` — never a "range" made of one number."""
        return people_spread(self.people_f1)

    @property
    def people_n(self) -> str:
        """The n behind the people's range: ``4`` or ``3–5`` (each reviewer's own n)."""
        return _people_n(self.people_f1)


def _people_range(people_f1: dict[str, Figure]) -> tuple[float, float] | None:
    values = [f.value for f in people_f1.values() if f.value is not None]
    return (min(values), max(values)) if values else None


def _people_n(people_f1: dict[str, Figure]) -> str:
    return people_n(people_f1)


@dataclass(frozen=True)
class ReviewerStats:
    key: str
    name: str
    verdicts: int  # current verdicts (criteria answered)
    responses: int
    median_seconds: float | None
    timed_responses: int
    vs_final: PairwiseAgreement  # against the human verdict in force
    vs_final_kappa_interval: Interval | None = None  # resampling the reviewer's responses
    vs_final_percent_interval: Interval | None = None


@dataclass(frozen=True)
class HumanBaseline:
    criteria: tuple[CriterionBaseline, ...]
    reviewers: tuple[ReviewerStats, ...]
    left_out: tuple[str, ...] = ()  # labels of the multi-choice criteria (not covered yet)


def _only(verdicts: dict[Key, Verdict], criterion_id: int) -> dict[int, Verdict]:
    return {rid: v for (rid, cid), v in verdicts.items() if cid == criterion_id}


def _by_criterion(verdicts: dict[Key, Verdict]) -> dict[int, dict[int, Verdict]]:
    """``_only`` of every criterion in one pass (a judge has a verdict on every response:
    splitting once instead of once per criterion)."""
    found: dict[int, dict[int, Verdict]] = defaultdict(dict)
    for (rid, cid), v in verdicts.items():
        found[cid][rid] = v
    return found


def _majority(values: list[Verdict]) -> Verdict | None:
    """The verdict most of ``values`` gave among MET and UNMET; None on a tie or none."""
    met = unmet = 0
    for value in values:
        if value is Verdict.MET:
            met += 1
        elif value is Verdict.UNMET:
            unmet += 1
    return Verdict.MET if met > unmet else Verdict.UNMET if unmet > met else None


def _figure(value: float | None, n: int, note: str = "",
            interval: Interval | None = None) -> Figure:
    return Figure(value=value, n=n, note=note, interval=interval)


def report_baseline(report: AgreementReport) -> HumanBaseline:
    """The human baseline of an agreement report's verdicts."""
    pairwise = report.pairwise
    data = report.data
    if not data.complete and report.patterns is not None and not any(
            s.is_human for s in data.verdict_sources):  # nobody's verdict is in force
        criteria = [c.id for c in data.criteria]
        pairwise = {**pairwise, **{(HUMAN, key): report.patterns.alone(key, criteria)
                                   for key in report.patterns.keys}}
    return build_baseline(data, pairwise)


def build_baseline(data: AgreementData,
                   pairwise: Mapping[tuple[str, str], AgreementByCriterion] | None = None,
                   ) -> HumanBaseline:
    """``pairwise``: the report's pairs; needed when ``data`` is not complete (a judge's
    agreement with people counts the verdicts it gave alone, which such data does not
    hold: it is the report's Human pair's, the same figures)."""
    if not data.complete and pairwise is None:
        raise ValueError("the judges' verdicts were read for the reviewed responses only: "
                         "pass the report's pairwise figures (report_baseline)")
    judges = [s for s in data.verdict_sources if not s.is_human]
    # Option labels are not MET/UNMET: multi-choice criteria are left out (module docstring).
    multi = {cid for cid, scale in criterion_kinds(data.criteria).items() if scale is not None}
    final = {k: v for k, v in data.verdicts.get(HUMAN, {}).items() if k[1] not in multi}
    rows: list[CriterionBaseline] = []
    split = {s.key: _by_criterion(data.verdicts.get(s.key, {})) for s in judges}
    for criterion in data.criteria:
        cid = criterion.id
        if cid in multi:
            continue
        people = {k: _only(v, cid) for k, v in data.reviewer_verdicts.items()}
        people = {k: v for k, v in people.items() if v}
        keys = tuple(sorted(people))
        final_c = _only(final, cid)
        boot = _Resampler(sorted({rid for v in people.values() for rid in v} | set(final_c)))
        method: Literal["kappa", "alpha", "none"] = "none"
        among = _figure(None, 0, "fewer than two reviewers answered")
        agree = total = 0
        for a, b in combinations(keys, 2):
            pair = compare_verdicts(people[a], people[b])
            agree += pair.confusion.met_met + pair.confusion.unmet_unmet
            total += pair.pairs_used
        if len(keys) == 2:
            method = "kappa"
            pair = compare_verdicts(people[keys[0]], people[keys[1]])
            among = _figure(pair.cohens_kappa, pair.pairs_used, pair.note, _interval(
                boot, boot.cells(people[keys[0]], people[keys[1]]), _kappa))
        elif len(keys) > 2:
            method = "alpha"
            alpha = krippendorff_alpha([people[k] for k in keys])
            among = _figure(alpha.alpha, alpha.pairable_units, alpha.note,
                            _interval(boot, _alpha_units(boot, people, keys), _alpha_of))
        percent = _figure(100.0 * agree / total if total else None, total,
                          "" if total else "no shared MET/UNMET verdicts",
                          _interval(boot, _pooled_pairs(boot, people, keys), _pooled_percent))

        people_f1: dict[str, Figure] = {}
        judge_scores: dict[str, list[tuple[float, int]]] = defaultdict(list)
        judge_cells: dict[str, list] = defaultdict(list)  # per left-out reviewer
        judge_maps = {s.key: split[s.key].get(cid, {}) for s in judges}
        for left in keys:
            others = [people[k] for k in keys if k != left]
            reference = {}
            for rid in people[left]:
                verdict = _majority([o[rid] for o in others if rid in o])
                if verdict is not None:
                    reference[rid] = verdict
            mine = {rid: people[left][rid] for rid in reference}
            result = compare_verdicts(reference, mine)
            people_f1[left] = _figure(result.balanced_f1, result.pairs_used, result.note,
                                      _interval(boot, boot.cells(reference, people[left]), _f1))
            for source in judges:
                theirs = {rid: judge_maps[source.key][rid] for rid in reference
                          if rid in judge_maps[source.key]}
                versus = compare_verdicts(reference, theirs)
                judge_cells[source.key].append(boot.cells(reference, judge_maps[source.key]))
                if versus.balanced_f1 is not None:
                    judge_scores[source.key].append((versus.balanced_f1, versus.pairs_used))
        baselines = []
        for source in judges:
            scores = judge_scores.get(source.key, [])
            loo = (_figure(sum(v for v, _ in scores) / len(scores),
                           max(n for _, n in scores), "",
                           _mean_f1_interval(boot, judge_cells[source.key]))
                   if scores else _figure(None, 0, "the judge and the reviewers share no "
                                                   "MET/UNMET verdicts"))
            decision = decide(loo, people_f1)
            versus_human = boot.cells(final_c, judge_maps[source.key])
            baselines.append(JudgeBaseline(
                source_key=source.key, label=source.label,
                vs_human=(compare_verdicts(final_c, judge_maps[source.key]) if data.complete
                          else pairwise[HUMAN, source.key].per_criterion[cid]),
                loo_f1=loo, position=decision.position, needed=decision.needed,
                sentence=sentence(source.label, loo, people_f1, len(keys), decision),
                vs_human_kappa_interval=_interval(boot, versus_human, _kappa),
                vs_human_f1_interval=_interval(boot, versus_human, _f1)))
        rows.append(CriterionBaseline(criterion, keys, method, among, percent, people_f1,
                                      tuple(baselines)))

    stats = []
    for key, verdicts in sorted(data.reviewer_verdicts.items()):
        seconds = data.reviewer_seconds.get(key, {})
        # resampling the reviewer's responses (all their criteria on a response together)
        binary = {k: v for k, v in verdicts.items() if k[1] not in multi}
        boot = _Resampler(sorted({rid for rid, _cid in binary}))
        cells = boot.cells(binary, final, item_of=lambda k: k[0])
        stats.append(ReviewerStats(
            key=key, name=data.reviewer_names.get(key, key), verdicts=len(verdicts),
            responses=len({rid for rid, _cid in verdicts}),
            median_seconds=median(seconds.values()) if seconds else None,
            timed_responses=len(seconds),
            vs_final=compare_verdicts(final, binary),
            vs_final_kappa_interval=_interval(boot, cells, _kappa),
            vs_final_percent_interval=_interval(boot, cells, _percent)))
    return HumanBaseline(criteria=tuple(rows), reviewers=tuple(stats),
                         left_out=tuple(c.label for c in data.criteria if c.id in multi))


def _interval(boot: _Resampler, contributions, statistic) -> Interval | None:
    return boot.interval(contributions, statistic, _ON_ARRAYS)
