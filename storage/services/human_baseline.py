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

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from statistics import median
from typing import Literal

from grading.agreement import (
    AgreementByCriterion,
    PairwiseAgreement,
    compare_counts,
    compare_verdicts,
    krippendorff_alpha,
)
from grading.bootstrap import Interval
from grading.types import Verdict
from storage.dto import CriterionInfo
from storage.services import baseline_rows
from storage.services.agreement import AgreementReport, criterion_kinds
from storage.services.agreement_sources import HUMAN, AgreementData, Key
from storage.services.baseline_decision import MARGIN as MARGIN
from storage.services.baseline_decision import Figure as Figure
from storage.services.baseline_decision import Position as Position
from storage.services.baseline_decision import decide, people_n, people_spread, sentence
from storage.services.baseline_decision import n_span as n_span
from storage.services.baseline_patterns import (
    ABSENT,
    Codes,
    patterns,
    responses,
    reviewer_cells,
    unique_rows,
)
from storage.services.baseline_resampler import (
    ON_ARRAYS,
    Draws,
    cells_per_item,
    weighted_compare,
)
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



_DECIDED = (Verdict.MET, Verdict.UNMET)


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


def report_baseline(report: AgreementReport,
                    rows: baseline_rows.RowMemo | None = None) -> HumanBaseline:
    """The human baseline of an agreement report's verdicts. ``rows``: criterion rows kept
    by their inputs (``baseline_rows``: the page's, so a verdict recomputes its criterion's
    row only); None computes every row."""
    pairwise = report.pairwise
    data = report.data
    if not data.complete and report.patterns is not None and not any(
            s.is_human for s in data.verdict_sources):  # nobody's verdict is in force
        criteria = [c.id for c in data.criteria]
        pairwise = {**pairwise, **{(HUMAN, key): report.patterns.alone(key, criteria)
                                   for key in report.patterns.keys}}
    return build_baseline(data, pairwise, rows)


def build_baseline(data: AgreementData,
                   pairwise: Mapping[tuple[str, str], AgreementByCriterion] | None = None,
                   rows: baseline_rows.RowMemo | None = None) -> HumanBaseline:
    """``pairwise``: the report's pairs; needed when ``data`` is not complete (a judge's
    agreement with people counts the verdicts it gave alone, which such data does not
    hold: it is the report's Human pair's, the same figures). ``rows``: as
    ``report_baseline``."""
    import numpy as np

    if not data.complete and pairwise is None:
        raise ValueError("the judges' verdicts were read for the reviewed responses only: "
                         "pass the report's pairwise figures (report_baseline)")
    judges = [s for s in data.verdict_sources if not s.is_human]
    # Option labels are not MET/UNMET: multi-choice criteria are left out (module docstring).
    multi = {cid for cid, scale in criterion_kinds(data.criteria).items() if scale is not None}
    final = {k: v for k, v in data.verdicts.get(HUMAN, {}).items() if k[1] not in multi}
    codes = Codes()
    coded = {key: codes.encode(verdicts) for key, verdicts in data.reviewer_verdicts.items()}
    coded_final = codes.encode(final)
    coded_judges = [codes.encode(data.verdicts.get(s.key, {})) for s in judges]
    # Per criterion, the reviewers who answered it and the responses resampled: those a
    # reviewer answered or with a verdict in force.
    rids = {c.id: responses([*coded.values(), coded_final], c.id) for c in data.criteria
            if c.id not in multi}
    outside = (_outside(data, judges, rids) if data.complete else {})
    draws = Draws()
    found_rows = []
    for criterion in data.criteria:
        if criterion.id in multi:
            continue
        keys = tuple(k for k in sorted(coded) if (coded[k].cids == criterion.id).any())
        groups, found = patterns(codes, [*(coded[k] for k in keys), coded_final, *coded_judges],
                                 criterion.id, rids[criterion.id])

        def row(criterion=criterion, keys=keys, groups=groups, found=found):
            return _criterion_baseline(data, criterion, keys, rids[criterion.id], groups,
                                       found, judges, draws, outside, pairwise)

        try:  # kept by its inputs: after a verdict, only its criterion's row moves
            key = None if rows is None else baseline_rows.row_key(
                criterion, keys, rids[criterion.id], groups, found, judges, draws.seed,
                data.complete, outside, pairwise, HUMAN, data.reviewer_verdicts)
        except (TypeError, KeyError):  # computed, not kept (a KeyError is raised there)
            key = None
        found_rows.append(row() if key is None else rows.row(key, row))

    stats = []
    # The cells from the codes, unless a value other than a Verdict equals one (a string
    # "MET" counts as MET in a cell: the maps' own comparison then)
    fast = not any(v in _DECIDED for v in codes.values[len(Codes().values):])
    for key, verdicts in sorted(data.reviewer_verdicts.items()):
        seconds = data.reviewer_seconds.get(key, {})
        # resampling the reviewer's responses (all their criteria on a response together)
        binary = ~np.isin(coded[key].cids, list(multi))
        if fast:
            cells, counts = reviewer_cells(codes, coded[key], coded_final, binary)
            vs_final = compare_counts(counts)
        else:
            mine = {k: v for k, v in verdicts.items() if k[1] not in multi}
            index = {rid: i for i, rid in enumerate(sorted({rid for rid, _cid in mine}))}
            cells = cells_per_item(index, mine, final, item_of=lambda k: k[0])
            vs_final = compare_verdicts(final, mine)
        boot = _Resampler([])
        if len(cells):
            cells, groups = unique_rows(cells)
            boot = _Resampler.grouped(groups, len(cells), draws)
        stats.append(ReviewerStats(
            key=key, name=data.reviewer_names.get(key, key), verdicts=len(verdicts),
            responses=len(np.unique(coded[key].rids)),
            median_seconds=median(seconds.values()) if seconds else None,
            timed_responses=len(seconds),
            vs_final=vs_final,
            vs_final_kappa_interval=_interval(boot, cells, _kappa),
            vs_final_percent_interval=_interval(boot, cells, _percent)))
    return HumanBaseline(criteria=tuple(found_rows), reviewers=tuple(stats),
                         left_out=tuple(c.label for c in data.criteria if c.id in multi))


def _outside(data: AgreementData, judges, rids: dict) -> dict:
    """(judge, criterion) -> the judge's verdicts on responses not resampled (verdict ->
    count): its agreement with the verdict in force counts them as its alone."""
    items = {cid: set(found.tolist()) for cid, found in rids.items()}
    found: dict[tuple[str, int], Counter] = defaultdict(Counter)
    for source in judges:
        for (rid, cid), verdict in data.verdicts.get(source.key, {}).items():
            if verdict is not None and rid not in items.get(cid, ()):
                found[source.key, cid][verdict] += 1
    return found


def _criterion_baseline(data: AgreementData, criterion: CriterionInfo, keys: tuple[str, ...],
                        rids, groups, patterns: list[tuple], judges, draws: Draws,
                        outside: dict, pairwise) -> CriterionBaseline:
    """One criterion's row, computed over its verdict patterns: the responses that every
    source (its reviewers ``keys``, the verdict in force, the judges) answered alike are one
    group (``baseline_patterns.patterns``)."""
    import numpy as np

    cid = criterion.id
    sizes = np.bincount(groups, minlength=len(patterns)).tolist()
    by_source = [{g: row[i] for g, row in enumerate(patterns) if row[i] is not ABSENT}
                 for i in range(len(keys) + 1 + len(judges))]
    people = dict(zip(keys, by_source, strict=False))
    final_c = by_source[len(keys)]
    judge_maps = {s.key: by_source[len(keys) + 1 + n] for n, s in enumerate(judges)}
    boot = _Resampler.grouped(groups, len(patterns), draws)

    def compare(a, b, extra=None):
        return weighted_compare(a, b, sizes, extra)

    method: Literal["kappa", "alpha", "none"] = "none"
    among = _figure(None, 0, "fewer than two reviewers answered")
    agree = total = 0
    pairs = {}
    for a, b in combinations(keys, 2):
        pair = pairs[a, b] = compare(people[a], people[b])
        agree += pair.confusion.met_met + pair.confusion.unmet_unmet
        total += pair.pairs_used
    if len(keys) == 2:
        method = "kappa"
        pair = pairs[keys]
        among = _figure(pair.cohens_kappa, pair.pairs_used, pair.note, _interval(
            boot, boot.cells(people[keys[0]], people[keys[1]]), _kappa))
    elif len(keys) > 2:
        # alpha's sums are not all integers: over the responses, in their order, as before
        method = "alpha"
        each = [_only(data.reviewer_verdicts[k], cid) for k in keys]
        alpha = krippendorff_alpha(each)
        units = _Resampler(rids.tolist(), draws=draws)
        among = _figure(alpha.alpha, alpha.pairable_units, alpha.note, _interval(
            units, _alpha_units(units, dict(zip(keys, each, strict=True)), keys), _alpha_of))
    percent = _figure(100.0 * agree / total if total else None, total,
                      "" if total else "no shared MET/UNMET verdicts",
                      _interval(boot, _pooled_pairs(boot, people, keys), _pooled_percent))

    people_f1: dict[str, Figure] = {}
    judge_scores: dict[str, list[tuple[float, int]]] = defaultdict(list)
    judge_cells: dict[str, list] = defaultdict(list)  # per left-out reviewer
    for left in keys:
        others = [people[k] for k in keys if k != left]
        reference = {}
        for group in people[left]:
            verdict = _majority([o[group] for o in others if group in o])
            if verdict is not None:
                reference[group] = verdict
        mine = {group: people[left][group] for group in reference}
        result = compare(reference, mine)
        people_f1[left] = _figure(result.balanced_f1, result.pairs_used, result.note,
                                  _interval(boot, boot.cells(reference, people[left]), _f1))
        for source in judges:
            theirs = {g: judge_maps[source.key][g] for g in reference
                      if g in judge_maps[source.key]}
            versus = compare(reference, theirs)
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
            vs_human=(compare(final_c, judge_maps[source.key], outside.get((source.key, cid)))
                      if data.complete else pairwise[HUMAN, source.key].per_criterion[cid]),
            loo_f1=loo, position=decision.position, needed=decision.needed,
            sentence=sentence(source.label, loo, people_f1, len(keys), decision),
            vs_human_kappa_interval=_interval(boot, versus_human, _kappa),
            vs_human_f1_interval=_interval(boot, versus_human, _f1)))
    return CriterionBaseline(criterion, keys, method, among, percent, people_f1,
                             tuple(baselines))


def _interval(boot: _Resampler, contributions, statistic) -> Interval | None:
    return boot.interval(contributions, statistic, _ON_ARRAYS)
