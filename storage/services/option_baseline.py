"""The multi-choice criteria the human baseline leaves out, as plain figures.

Per criterion with options: how far the reviewers agree with each other (the scale's kappa
between two reviewers, Krippendorff's alpha on its scale between more) and each judge against
the human verdict in force (the scale's kappa, percent agreement, macro-F1), every kappa and
alpha with its 95% percentile bootstrap interval (``RESAMPLES`` draws, seeded as the human
baseline's). Every figure comes from ``grading.option_agreement``; NA options and
CANNOT_ASSESS are left out as CANNOT_ASSESS is on binary criteria.
"""

from __future__ import annotations

from grading.bootstrap import Interval
from grading.option_agreement import (
    OptionPairwiseAgreement,
    OptionScale,
    alpha_interval,
    compare_options,
    kappa_interval,
    options_alpha,
)
from storage.services.agreement import criterion_kinds
from storage.services.agreement_sources import HUMAN, AgreementData
from storage.services.baseline_decision import Figure

RESAMPLES = 1000
SEED = 0


def _ci(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [interval.low, interval.high]


def _pair(result: OptionPairwiseAgreement) -> dict:
    return {"metric": result.metric, "kappa": result.kappa,
            "percent_agreement": result.percent_agreement, "macro_f1": result.macro_f1,
            "n": result.pairs_used, "excluded_cannot_assess": result.excluded_cannot_assess,
            "note": result.note}


def _only(verdicts: dict, criterion_id: int) -> dict[int, object]:
    return {rid: v for (rid, cid), v in verdicts.items() if cid == criterion_id}


def option_baseline_json(data: AgreementData) -> list[dict]:
    """One entry per multi-choice criterion, in the rubric's order ([] when there is none)."""
    kinds = criterion_kinds(data.criteria)
    judges = [s for s in data.verdict_sources if not s.is_human]
    out = []
    for criterion in data.criteria:
        scale = kinds.get(criterion.id)
        if scale is None:
            continue
        out.append({
            "criterion": criterion.label, "requirement": criterion.requirement,
            "scale_type": scale.scale_type, "options": list(scale.labels),
            "reviewers": _among(data, criterion.id, scale),
            "judges": [_judge(data, source.key, source.label, criterion.id, scale)
                       for source in judges],
        })
    return out


def _among(data: AgreementData, criterion_id: int, scale: OptionScale) -> dict:
    method, count, figure = among_figure(data, criterion_id, scale)
    return {"count": count, "method": method, "value": figure.value, "n": figure.n,
            "note": figure.note, "ci95": _ci(figure.interval)}


def among_figure(data: AgreementData, criterion_id: int,
                 scale: OptionScale) -> tuple[str, int, Figure]:
    """How far the reviewers agree on the criterion: (the metric's name or "none", how many
    reviewers answered, the figure with its n and 95% interval)."""
    people = {k: _only(v, criterion_id) for k, v in sorted(data.reviewer_verdicts.items())}
    people = {k: v for k, v in people.items() if v}
    keys = list(people)
    if len(keys) == 2:
        first, second = people[keys[0]], people[keys[1]]
        pair = compare_options(first, second, scale)
        return scale.kappa_name, 2, Figure(
            pair.kappa, pair.pairs_used, pair.note,
            kappa_interval(first, second, scale, resamples=RESAMPLES, seed=SEED))
    if len(keys) > 2:
        sources = [people[k] for k in keys]
        alpha = options_alpha(sources, scale)
        return scale.alpha_name, len(keys), Figure(
            alpha.alpha, alpha.pairable_units, alpha.note,
            alpha_interval(sources, scale, resamples=RESAMPLES, seed=SEED))
    return "none", len(keys), Figure(None, 0, "fewer than two reviewers answered")


def _judge(data: AgreementData, key: str, label: str, criterion_id: int,
           scale: OptionScale) -> dict:
    human = _only(data.verdicts.get(HUMAN, {}), criterion_id)
    theirs = _only(data.verdicts.get(key, {}), criterion_id)
    return {"source": key, "label": label,
            "vs_human_verdict": {
                **_pair(compare_options(human, theirs, scale)),
                "kappa_ci95": _ci(kappa_interval(human, theirs, scale, resamples=RESAMPLES,
                                                 seed=SEED))}}
