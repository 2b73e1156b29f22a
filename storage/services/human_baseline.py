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

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from statistics import median
from typing import Literal

from grading.agreement import (
    AgreementByCriterion,
    PairwiseAgreement,
    alpha_value,
    compare_verdicts,
    krippendorff_alpha,
    pair_scores,
    pair_scores_array,
)
from grading.bootstrap import (
    Interval,
    percentile_interval,
    resample_weights,
    weighted_sums,
    weighted_sums_array,
)
from grading.types import Verdict
from storage.dto import CriterionInfo
from storage.services.agreement import AgreementReport, criterion_kinds
from storage.services.agreement_sources import HUMAN, AgreementData, Key
from storage.services.baseline_decision import MARGIN as MARGIN
from storage.services.baseline_decision import Figure as Figure
from storage.services.baseline_decision import Position as Position
from storage.services.baseline_decision import decide, people_n, people_spread, sentence
from storage.services.baseline_decision import n_span as n_span

_DECIDED = (Verdict.MET, Verdict.UNMET)
RESAMPLES = 1000
SEED = 0
_CODE = {Verdict.MET: 0, Verdict.UNMET: 1}
_CELL = {(Verdict.MET, Verdict.MET): 0, (Verdict.MET, Verdict.UNMET): 1,
         (Verdict.UNMET, Verdict.MET): 2, (Verdict.UNMET, Verdict.UNMET): 3}


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


class _Resampler:
    """One set of bootstrap draws over ``items`` (response ids), shared by the figures."""

    def __init__(self, items: list[int], seed: int = SEED):
        self.index = {item: i for i, item in enumerate(items)}
        self.weights = (resample_weights(len(items), resamples=RESAMPLES, seed=seed)
                        if len(items) >= 2 else None)
        self._codes: dict[int, tuple[dict, object]] = {}

    def cells(self, a: dict, b: dict, item_of=None):
        """Per item, the counts of each confusion cell of A (reference) vs B: only A's keys
        among the items count, so B may hold more than A's keys. The maps must not change
        once compared (each is read into an array once)."""
        import numpy as np

        if item_of is not None:  # several keys per item (a reviewer's criteria)
            counts = np.zeros((len(self.index), 4), dtype=np.int64)
            for key, first in a.items():
                cell = _CELL.get((first, b.get(key)))
                if cell is not None:
                    counts[self.index[item_of(key)], cell] += 1
            return counts
        first, second = self._coded(a), self._coded(b)
        both = (first >= 0) & (second >= 0)
        counts = np.zeros((len(self.index), 4), dtype=np.int64)
        rows = np.flatnonzero(both)
        counts[rows, first[rows] * 2 + second[rows]] = 1
        return counts

    def _coded(self, verdicts: dict):
        """The map's verdict per item: 0 MET, 1 UNMET, -1 neither or absent (a map the
        figures compare many times is read once; the map is kept so its id stays its own)."""
        import numpy as np

        held = self._codes.get(id(verdicts))
        if held is not None and held[0] is verdicts:
            return held[1]
        codes = np.full(len(self.index), -1, dtype=np.int8)
        index = self.index
        for key, verdict in verdicts.items():
            code = _CODE.get(verdict)
            if code is not None and key in index:
                codes[index[key]] = code
        self._codes[id(verdicts)] = (verdicts, codes)
        return codes

    def sums(self, contributions) -> list[list] | None:
        """Per resample, the weighted sums of per-item contributions (an items x k array)."""
        if self.weights is None:
            return None
        return weighted_sums(self.weights, contributions)

    def interval(self, contributions, statistic) -> Interval | None:
        if self.weights is None:
            return None
        figure = _ON_ARRAYS.get(statistic)
        if figure is not None:  # every resample at once: the same floats (pair_scores_array)
            values = pair_scores_array(weighted_sums_array(self.weights, contributions))
            return percentile_interval(_defined(values[figure]), resamples=RESAMPLES)
        rows = self.sums(contributions)
        return percentile_interval([statistic(*row) for row in rows], resamples=RESAMPLES)


def _kappa(*cells: int) -> float | None:
    return pair_scores(*cells)[1]


def _f1(*cells: int) -> float | None:
    return pair_scores(*cells)[4]


def _percent(*cells: int) -> float | None:
    return pair_scores(*cells)[0]


# The statistics above by their place in pair_scores, computed on all resamples at once.
_ON_ARRAYS = {_percent: 0, _kappa: 1, _f1: 4}


def _defined(values) -> list[float | None]:
    return [None if math.isnan(v) else v for v in values.tolist()]


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
            among = _figure(pair.cohens_kappa, pair.pairs_used, pair.note, boot.interval(
                boot.cells(people[keys[0]], people[keys[1]]), _kappa))
        elif len(keys) > 2:
            method = "alpha"
            alpha = krippendorff_alpha([people[k] for k in keys])
            among = _figure(alpha.alpha, alpha.pairable_units, alpha.note,
                            boot.interval(_alpha_units(boot, people, keys), _alpha_of))
        percent = _figure(100.0 * agree / total if total else None, total,
                          "" if total else "no shared MET/UNMET verdicts",
                          boot.interval(_pooled_pairs(boot, people, keys), _pooled_percent))

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
                                      boot.interval(boot.cells(reference, people[left]), _f1))
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
                vs_human_kappa_interval=boot.interval(versus_human, _kappa),
                vs_human_f1_interval=boot.interval(versus_human, _f1)))
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
            vs_final_kappa_interval=boot.interval(cells, _kappa),
            vs_final_percent_interval=boot.interval(cells, _percent)))
    return HumanBaseline(criteria=tuple(rows), reviewers=tuple(stats),
                         left_out=tuple(c.label for c in data.criteria if c.id in multi))


def _alpha_units(boot: _Resampler, people: dict[str, dict[int, Verdict]], keys):
    """Per response, alpha's sums: (values, MET values, MET x UNMET / (values - 1),
    pairable unit)."""
    import numpy as np

    sums = np.zeros((len(boot.index), 4), dtype=np.float64)
    for rid, i in boot.index.items():
        values = [people[k][rid] for k in keys if people[k].get(rid) in _DECIDED]
        if len(values) >= 2:
            met = values.count(Verdict.MET)
            unmet = len(values) - met
            sums[i] = (len(values), met, met * unmet / (len(values) - 1), 1)
    return sums


def _alpha_of(values: float, met: float, observed: float, units: float) -> float | None:
    if units < 2:
        return None
    return alpha_value(round(values), round(met), observed)


def _pooled_pairs(boot: _Resampler, people: dict[str, dict[int, Verdict]], keys):
    """Per response, (agreeing pairs, pairs) over every two reviewers."""
    import numpy as np

    sums = np.zeros((len(boot.index), 2), dtype=np.int64)
    for a, b in combinations(keys, 2):
        cells = boot.cells(people[a], people[b])
        sums[:, 0] += cells[:, 0] + cells[:, 3]
        sums[:, 1] += cells.sum(axis=1)
    return sums


def _pooled_percent(agree: int, total: int) -> float | None:
    return 100.0 * agree / total if total else None


def _mean_f1_interval(boot: _Resampler, per_left: list) -> Interval | None:
    """The judge's leave-one-out figure on each resample: the mean of its macro-F1 against
    each left-out reviewer's reference, over those where it is defined."""
    if boot.weights is None or not per_left:
        return None
    import numpy as np

    # sum(defined) / len(defined) per resample, summed in the same order as one at a time
    total = np.zeros(len(boot.weights))
    count = np.zeros(len(boot.weights), dtype=np.int64)
    for cells in per_left:
        f1 = pair_scores_array(weighted_sums_array(boot.weights, cells))[4]
        defined = ~np.isnan(f1)
        total = np.where(defined, total + f1, total)
        count += defined
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(count > 0, total / count, np.nan)
    return percentile_interval(_defined(mean), resamples=RESAMPLES)
