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

from grading.bootstrap import percentile_interval, resample_weights, weighted_sums
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
    index = {rid: i for i, rid in enumerate(items)}
    size, kind = len(scale.labels), scale.scale_type
    weights = resample_weights(len(items), resamples=RESAMPLES, seed=SEED) \
        if len(items) >= 2 else None

    def cells(ref: dict[int, int], other: dict[int, int]):
        """Per response, its confusion cell (reference x other) as a one-hot row."""
        import numpy as np

        counts = np.zeros((len(items), size * size), dtype=np.int64)
        for rid, first in ref.items():
            second = other.get(rid)
            if second is not None:
                counts[index[rid], first * size + second] += 1
        return counts

    def kappa(flat) -> float | None:
        return option_pair_scores([list(flat[i * size:(i + 1) * size]) for i in range(size)],
                                  kind)[1]

    def figure(per_left: list, note: str) -> Figure:
        """The mean kappa over the left-out reviewers' references, and on each resample."""
        totals = [counts.sum(axis=0).tolist() for counts in per_left]
        values = [v for v in (kappa(t) for t in totals) if v is not None]
        value = sum(values) / len(values) if values else None
        n = max(sum(t) for t in totals)
        interval = None
        if weights is not None:
            sums = [weighted_sums(weights, counts) for counts in per_left]
            resampled = []
            for r in range(RESAMPLES):
                defined = [v for v in (kappa(rows[r]) for rows in sums) if v is not None]
                resampled.append(sum(defined) / len(defined) if defined else None)
            interval = percentile_interval(resampled, resamples=RESAMPLES)
        return Figure(value, n, "" if value is not None else note, interval)

    people_f1 = {left: figure([cells(refs[left], people[left])],
                              "no disagreement possible by chance, or no pairs")
                 for left in refs}
    judge_figures = {key: figure([cells(refs[left], judges[key]) for left in refs],
                                 "no shared options with the reviewers")
                     for key in judge_keys}
    return people_f1, judge_figures


