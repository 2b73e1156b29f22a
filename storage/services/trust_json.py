"""The trust report as plain JSON: ``rubric-workbench agreement --format json`` ("trust").

Every figure is ``{"value", "ci95": [low, high] or null, "n"}`` (grading.trust.figures).
"""

from __future__ import annotations

from grading.trust.criterion_order import MIN_PER_GROUP, OrderEffect
from grading.trust.pairwise_order import MIN_UNITS, PairwiseOrder
from grading.trust.position import MIN_CHOICES
from grading.trust.ppi import CorrectedMean
from storage.services.trust_report import TrustReport


def _corrected_json(c: CorrectedMean) -> dict:
    return {"judge_mean": c.judge.as_json(), "people_mean_on_sample": c.people.as_json(),
            "judge_mean_on_sample": c.judge_on_sample,
            "corrected": c.corrected.as_json(), "judge_weight": c.power,
            "classical_ppi": None if c.classical is None else c.classical.as_json()}


def _order_json(effect: OrderEffect | None) -> dict | None:
    """Late minus early in shuffled one-shot prompts; None: never shuffled."""
    if effect is None:
        return None
    return {"criteria_listed": effect.listed, "early_mean": effect.early.as_json(),
            "late_mean": effect.late.as_json(),
            "late_minus_early": effect.late_minus_early.as_json(),
            "cant_tell_yet": not effect.enough,
            "min_per_group": MIN_PER_GROUP}


def pairwise_json(order: PairwiseOrder | None) -> dict | None:
    """The judge's order effect in stored comparisons; None: it judged none."""
    if order is None:
        return None
    return {"first_shown_preferred_minus_chance": order.first_shown.as_json(),
            "first_shown_share": order.first_shown_share,
            "position_consistency": order.consistency.as_json(),
            "pair_criteria_answered": order.units, "both_orders_first_shown": order.both_first,
            "both_orders_second_shown": order.both_second,
            "cant_tell_yet": not order.enough, "min_pair_criteria": MIN_UNITS}


def trust_json(report: TrustReport) -> dict:
    """The report as plain JSON (``rubric-workbench agreement --format json``: "trust")."""
    judges = []
    for j in report.judges:
        rows = []
        for r in j.criteria:
            rows.append({
                "criterion": r.label, "unit": r.unit,
                "corrected_estimate": _corrected_json(r.corrected),
                "stability": None if r.stability is None else {
                    "samples": r.stability.samples,
                    "flip_rate": r.stability.flip_rate.as_json(),
                    "fleiss_kappa": r.stability.fleiss_kappa.as_json(),
                    "mean_variance": r.stability.mean_variance,
                    "noisy": r.stability.noisy},
                "length_per_1000_chars": {
                    "all_responses": r.length_all.slope.as_json(),
                    "within_human_verdict": r.length_controlled.slope.as_json()},
                "position_first_shown": None if r.position is None else {
                    "chosen_first_rate": r.position.first_rate,
                    "expected_without_effect": r.position.expected,
                    "excess": r.position.excess.as_json(),
                    "cant_tell_yet": not r.position.enough,
                    "min_choices": MIN_CHOICES},
                "criterion_order": _order_json(r.criterion_order),
            })
        judges.append({
            "source": j.source_key, "label": j.label, "verdict": j.verdict,
            "agreement_vs_human": None if j.agreement is None else {
                "kappa": j.agreement.cohens_kappa,
                "percent": j.agreement.percent_agreement, "n": j.agreement.pairs_used},
            "stability_samples": [f"run:{r}" for r in j.samples],
            "samples_per_criterion": j.samples_per_criterion,
            "replayed_runs_left_out": [f"run:{r}" for r in j.replayed],
            "cost_per_1000_responses": j.cost_per_1000, "unpriced_grades": j.unpriced,
            "score": _corrected_json(j.score), "criteria": rows,
            "pairwise_order": pairwise_json(j.pairwise_order),
            "panel_members": [f"run:{r}" for r in j.panel_members],
            "stability_basis": j.stability_basis or None,
            "human_range": [
                {"criterion": h.criterion, "position": h.position,
                 "judge_macro_f1": {"value": h.judge_f1.value, "n": h.judge_f1.n,
                                    "ci95": None if h.judge_f1.interval is None else
                                    [h.judge_f1.interval.low, h.judge_f1.interval.high]},
                 "people_macro_f1": h.people_f1, "reviewers": h.reviewers}
                for h in j.human_range],
        })
    return {
        "corrected_estimates_use": report.rule,
        "random_sample_size": report.sample_size,
        "sampled_responses_reviewed": report.sampled_reviewed,
        "reviewed_outside_sample_left_out": report.reviewed_outside_sample,
        "noisy_threshold_mean_variance": report.noisy_threshold,
        "notes": list(report.notes), "judges": judges,
        "pairwise_order": [
            {"model": p.model, "comparisons": list(p.comparisons), **pairwise_json(p.order)}
            for p in report.pairwise],
    }
