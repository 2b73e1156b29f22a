"""Leave one reviewer out on a multi-choice criterion: the judge against a person, as a person
against a person.

For each reviewer in turn, the reference is the other reviewers' option on the responses they
share with it (their most chosen option; a tie is left out). The reviewer's kappa of the scale
against that reference is one of "the people's figures"; the judge's kappa against the very same
reference and responses, averaged over the left-out reviewers, is compared with them
(``baseline_decision.decide``), as ``human_baseline`` does with macro-F1 on MET/UNMET.

Comparing the judge with the human verdict in force instead would flatter it: that verdict
exists where the reviewers agreed, the easy responses.

Intervals: 95% percentile bootstrap over the responses (``RESAMPLES`` draws, seeded), every
figure of a criterion on the same draws, computed from confusion counts through
``grading.option_agreement.option_pair_scores``. NA options and CANNOT_ASSESS are left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from grading.bootstrap import percentile_interval
from grading.option_agreement import ABSTAIN, OptionScale, option_pair_scores
from storage.services.agreement_sources import AgreementData
from storage.services.baseline_decision import Figure

RESAMPLES = 1000
SEED = 0


def _parsed(verdicts: dict, criterion_id: int, scale: OptionScale) -> dict[int, int]:
    out = {}
    for (rid, cid), value in verdicts.items():
        if cid == criterion_id:
            index = scale.parse(value)
            if index != ABSTAIN:
                out[rid] = index
    return out


def _kappa(pairs: Sequence[tuple[int, int]], size: int, scale_type: str) -> float | None:
    counts = Counter(pairs)
    rows = [[counts[i, j] for j in range(size)] for i in range(size)]
    return option_pair_scores(rows, scale_type)[1]


def leave_one_out(data: AgreementData, criterion_id: int, scale: OptionScale,
                  judge_keys: Sequence[str]) -> tuple[dict[str, Figure], dict[str, Figure]]:
    """(reviewer key -> the reviewer's kappa vs the others, judge key -> the judge's mean
    kappa vs the same references); both empty with fewer than two reviewers."""
    people = {k: _parsed(v, criterion_id, scale) for k, v in sorted(data.reviewer_verdicts.items())}
    people = {k: v for k, v in people.items() if v}
    if len(people) < 2:
        return {}, {}
    refs: dict[str, dict[int, int]] = {}
    for left, mine in people.items():
        ref = {}
        for rid in mine:
            votes = Counter(o[rid] for k, o in people.items() if k != left and rid in o)
            top = votes.most_common(2)
            if top and (len(top) == 1 or top[0][1] > top[1][1]):
                ref[rid] = top[0][0]
        refs[left] = ref
    judges = {k: _parsed(data.verdicts.get(k, {}), criterion_id, scale) for k in judge_keys}
    items = sorted({rid for ref in refs.values() for rid in ref})
    size, kind = len(scale.labels), scale.scale_type

    def pairs(ref: dict[int, int], other: dict[int, int], rids) -> list[tuple[int, int]]:
        return [(ref[r], other[r]) for r in rids if r in ref and r in other]

    def person(left: str, rids) -> float | None:
        return _kappa(pairs(refs[left], people[left], rids), size, kind)

    def judge(key: str, rids) -> tuple[float | None, int]:
        values = [_kappa(pairs(refs[left], judges[key], rids), size, kind) for left in refs]
        defined = [v for v in values if v is not None]
        return (sum(defined) / len(defined) if defined else None), max(
            len(pairs(refs[left], judges[key], rids)) for left in refs)

    draws = _draws(len(items))
    people_f1 = {}
    for left in refs:
        value = person(left, items)
        people_f1[left] = Figure(
            value, len(pairs(refs[left], people[left], items)),
            "" if value is not None else "no disagreement possible by chance, or no pairs",
            _interval([person(left, [items[i] for i in d]) for d in draws]))
    judge_figures = {}
    for key in judge_keys:
        value, n = judge(key, items)
        judge_figures[key] = Figure(
            value, n, "" if value is not None else "no shared options with the reviewers",
            _interval([judge(key, [items[i] for i in d])[0] for d in draws]))
    return people_f1, judge_figures


def _draws(count: int) -> list[list[int]]:
    import random

    if count < 2:
        return []
    rng = random.Random(SEED)
    return [[rng.randrange(count) for _ in range(count)] for _ in range(RESAMPLES)]


def _interval(values: list[float | None]):
    return percentile_interval(values, resamples=RESAMPLES) if values else None
