"""The human baseline as it was computed before the verdict patterns (issue 41): every
figure over the responses one map at a time, each its own bootstrap sums. Kept for the
tests, which compare whole baselines with it (tests/storage/test_baseline_patterns.py)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from itertools import combinations
from statistics import median
from typing import Literal

from grading.agreement import AgreementByCriterion, compare_verdicts, krippendorff_alpha
from grading.types import Verdict
from storage.services.agreement import criterion_kinds
from storage.services.agreement_sources import HUMAN, AgreementData, Key
from storage.services.baseline_decision import Figure, decide, sentence
from storage.services.baseline_resampler import Resampler as _Resampler
from storage.services.baseline_resampler import alpha_of as _alpha_of
from storage.services.baseline_resampler import alpha_units as _alpha_units
from storage.services.baseline_resampler import f1 as _f1
from storage.services.baseline_resampler import kappa as _kappa
from storage.services.baseline_resampler import mean_f1_interval as _mean_f1_interval
from storage.services.baseline_resampler import percent as _percent
from storage.services.baseline_resampler import pooled_pairs as _pooled_pairs
from storage.services.baseline_resampler import pooled_percent as _pooled_percent
from storage.services.human_baseline import (
    CriterionBaseline,
    HumanBaseline,
    JudgeBaseline,
    ReviewerStats,
    _figure,
    _majority,
    _only,
)


def _by_criterion(verdicts: dict[Key, Verdict]) -> dict[int, dict[int, Verdict]]:
    """``_only`` of every criterion in one pass (a judge has a verdict on every response:
    splitting once instead of once per criterion)."""
    found: dict[int, dict[int, Verdict]] = defaultdict(dict)
    for (rid, cid), v in verdicts.items():
        found[cid][rid] = v
    return found


def _interval(boot, contributions, statistic):
    return boot.interval(contributions, statistic)


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


