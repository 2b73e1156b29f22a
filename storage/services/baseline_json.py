"""The human baseline as plain JSON: what ``rubric-workbench agreement`` prints per criterion
(storage.services.human_baseline computes the figures)."""

from __future__ import annotations

from grading.agreement import PairwiseAgreement
from grading.bootstrap import Interval
from storage.services.agreement_sources import AgreementData
from storage.services.baseline_decision import Figure
from storage.services.human_baseline import HumanBaseline


def baseline_json(data: AgreementData, baseline: HumanBaseline) -> dict:
    """The per-criterion figures as plain JSON (the ``agreement`` command prints this)."""

    def pair(p: PairwiseAgreement) -> dict:
        return {"kappa": p.cohens_kappa, "percent_agreement": p.percent_agreement,
                "macro_f1": p.balanced_f1, "n": p.pairs_used,
                "excluded_cannot_assess": p.excluded_cannot_assess, "note": p.note}

    def ci(interval: Interval | None) -> list[float] | None:
        return None if interval is None else [interval.low, interval.high]

    def fig(f: Figure) -> dict:
        return {"value": f.value, "n": f.n, "ci95": ci(f.interval), "note": f.note}

    return {
        "rubric_version_id": data.rubric_version_id,
        "dataset_id": data.dataset_id,
        "reviewed_responses": data.reviewed_responses,
        "criteria": [
            {
                "criterion": row.criterion.label,
                "requirement": row.criterion.requirement,
                "reviewers": {
                    "count": len(row.reviewers),
                    "method": row.method,
                    "agreement": fig(row.among),
                    "percent_agreement": fig(row.percent),
                    "leave_one_out_macro_f1": {
                        data.reviewer_names.get(k, k): fig(f)
                        for k, f in row.people_f1.items()},
                    "range": list(row.people_range) if row.people_range else None,
                    "spread": row.people_spread,
                },
                "judges": [
                    {"source": j.source_key, "label": j.label,
                     "vs_human_verdict": {**pair(j.vs_human),
                                          "kappa_ci95": ci(j.vs_human_kappa_interval),
                                          "macro_f1_ci95": ci(j.vs_human_f1_interval)},
                     "leave_one_out_macro_f1": fig(j.loo_f1),
                     "position": j.position, "responses_needed": j.needed,
                     "sentence": j.sentence}
                    for j in row.judges],
            }
            for row in baseline.criteria
        ],
        "reviewers": [
            {"reviewer": r.name, "key": r.key, "verdicts": r.verdicts,
             "responses": r.responses, "median_seconds_per_response": r.median_seconds,
             "timed_responses": r.timed_responses,
             "vs_final_verdict": {**pair(r.vs_final),
                                  "kappa_ci95": ci(r.vs_final_kappa_interval),
                                  "percent_agreement_ci95": ci(r.vs_final_percent_interval)}}
            for r in baseline.reviewers
        ],
    }
