"""Agreement page: how far to trust a judge — corrected estimates, stability, length and
position effects, cost. Every figure with its n and 95% interval; the numbers come from
storage.services.trust_report (docs/guide/trust.md says what each one means)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from grading.trust.criterion_order import MIN_PER_GROUP, OrderEffect
from grading.trust.figures import Figure
from grading.trust.pairwise_order import MIN_UNITS
from grading.trust.position import MIN_CHOICES, PositionEffect
from storage.services.trust_report import JudgeTrust, TrustReport
from ui import safe_text
from ui.agreement_text import fmt_cost


def _fig(figure: Figure | None, digits: int = 2, signed: bool = False) -> str:
    """``0.62 [0.55, 0.69] (n=120)``; ``— (n=0)`` without a value."""
    if figure is None:
        return "—"
    if figure.value is None:
        return f"— (n={figure.n})"
    form = f"{{:{'+' if signed else ''}.{digits}f}}"
    interval = ("" if figure.low is None else
                f" [{form.format(figure.low)}, {form.format(figure.high)}]")
    return f"{form.format(figure.value)}{interval} (n={figure.n})"


def render_trust(report: TrustReport) -> None:
    st.subheader("How far to trust this judge")
    if not report.judges:
        st.info("No judge with per-criterion verdicts yet: grade this dataset on the Grade "
                "page.")
        return
    options = {j.source_key: j for j in report.judges}
    if st.session_state.get("agreement_trust_judge") not in options:
        st.session_state["agreement_trust_judge"] = next(iter(options))
    judge = options[st.selectbox(
        "Judge", list(options), key="agreement_trust_judge",
        format_func=lambda k: safe_text.text(options[k].label))]
    st.markdown(f"**Verdict:** {safe_text.md(judge.verdict)}")
    cost = ("unknown" if judge.cost_per_1000 is None else fmt_cost(judge.cost_per_1000))
    unpriced = f" ({judge.unpriced} grades unpriced)" if judge.unpriced else ""
    st.caption(f"Cost per 1,000 responses: {cost}{unpriced}")
    _render_human_range(judge)
    _render_corrected(report, judge)
    _render_stability(report, judge)
    _render_bias(judge)
    _render_pairwise(report)


def _render_human_range(judge: JudgeTrust) -> None:
    """The judge against the people's own range (the human baseline above, per criterion)."""
    if not judge.human_range:
        return
    st.markdown("**Against the people** (macro-F1 against the other reviewers)")
    rows = [{"Criterion": safe_text.text(h.criterion),
             "Judge": _baseline_fig(h.judge_f1),
             "The people (each reviewer)": safe_text.text(h.people_f1),
             "Where": _WHERE[h.position]} for h in judge.human_range]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


_WHERE = {"inside": "like a person", "above": "better than the people",
          "below": "worse than the people", "unclear": "can't tell yet",
          "unknown": "no baseline (needs two reviewers on the same responses)"}


def _baseline_fig(figure) -> str:
    if figure.value is None:
        return f"— (n={figure.n})"
    interval = ("" if figure.interval is None else
                f" [{figure.interval.low:.2f}, {figure.interval.high:.2f}]")
    return f"{figure.value:.2f}{interval} (n={figure.n})"


def _weight(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _render_corrected(report: TrustReport, judge: JudgeTrust) -> None:
    st.markdown("**Corrected estimates** (prediction-powered, 95% interval)")
    rows = [{"Criterion": safe_text.text(r.label), "Unit": r.unit,
             "Judge's mean": _fig(r.corrected.judge),
             "People's mean on the sample": _fig(r.corrected.people),
             "Corrected estimate": _fig(r.corrected.corrected),
             "Judge's weight": _weight(r.corrected.power)} for r in judge.criteria]
    rows.append({"Criterion": "Score", "Unit": "score",
                 "Judge's mean": _fig(judge.score.judge),
                 "People's mean on the sample": _fig(judge.score.people),
                 "Corrected estimate": _fig(judge.score.corrected),
                 "Judge's weight": _weight(judge.score.power)})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", column_config={
        "Judge's weight": st.column_config.TextColumn(
            help="How much the corrected estimate leans on the judge (0: people's sample "
                 "alone, the judge tells nothing; 1: the judge fully, corrected by its "
                 "average error on the sample). Chosen to give the narrowest interval.")})
    st.caption(
        f"Counted: {report.rule}. {report.sampled_reviewed} of the random sample's "
        f"{report.sample_size} responses reviewed; {report.reviewed_outside_sample} "
        "reviewed responses outside the sample are left out of these figures.")
    for note in report.notes:
        st.info(note)


def _render_stability(report: TrustReport, judge: JudgeTrust) -> None:
    st.markdown("**Stability across samples**")
    if judge.panel_members and not judge.stability_measured:
        st.caption(f"Not measured: every member of this panel needs at least two samples "
                   f"(its own samples per criterion, or other runs of the same model and "
                   f"grader). Samples: {safe_text.md(judge.stability_basis)}.")
        return
    if not judge.stability_measured:
        left = (f" Runs {', '.join(f'#{r}' for r in judge.replayed)} replayed every answer "
                "from the cache and measure nothing." if judge.replayed else "")
        st.caption("Not measured: one run of this judge (same model and grader) on this "
                   "dataset. Grade again with more than one sample per criterion (Grade "
                   f"page, or --samples) to measure it.{left}")
        return
    rows = [{"Criterion": safe_text.text(r.label),
             "Flip rate": _fig(r.stability.flip_rate),
             "Fleiss' κ": _fig(r.stability.fleiss_kappa),
             "Noisy": "yes" if r.stability.noisy else "no"}
            for r in judge.criteria if r.stability is not None]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    if judge.stability_basis:
        where = f"Samples: {safe_text.md(judge.stability_basis)}."
    elif judge.samples_per_criterion > 1:
        where = (f"Samples: run #{judge.samples[0]} asked the judge "
                 f"{judge.samples_per_criterion} times per criterion.")
    else:
        where = (f"Samples: runs {', '.join(f'#{r}' for r in judge.samples)} (same rubric "
                 "version, dataset, model and grader).")
    st.caption(f"{where} Noisy: mean variance of the verdict across samples above "
               f"{report.noisy_threshold}.")


def _render_bias(judge: JudgeTrust) -> None:
    st.markdown("**Length and position effects**")
    rows = [{"Criterion": safe_text.text(r.label), "Unit": r.unit,
             "Per 1,000 characters (all responses)": _fig(r.length_all.slope, signed=True),
             "Within the human verdict": _fig(r.length_controlled.slope, signed=True),
             "First-shown option chosen, minus chance": _position(r.position),
             "Listed late minus early (one-shot)": _order(r.criterion_order)}
            for r in judge.criteria]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption("All responses: association (longer answers may simply be better). Within "
               "the human verdict: among responses people judged alike — the judge's own "
               "length effect. Listed late minus early: on one-shot runs that shuffled the "
               "criteria, the judge's mean when a criterion was listed in the second half of "
               f"the prompt minus the first half (can't tell yet below {MIN_PER_GROUP} "
               "responses in either half). “—”: nothing to measure (under 3 responses, no "
               "spread in length, or the same verdict for every response). An effect is "
               "named in the verdict only when its interval excludes 0.")


def _position(effect: PositionEffect | None) -> str:
    """``+0.20 [+0.05, +0.33] (n=40)``; "can't tell yet (n=…; need about …)"; "not
    shuffled"."""
    if effect is None:
        return "not shuffled"
    if not effect.enough:
        return f"can't tell yet (n={effect.excess.n}; need about {MIN_CHOICES})"
    return _fig(effect.excess, signed=True)


def _render_pairwise(report: TrustReport) -> None:
    """Per model that judged stored comparisons: its pull towards the first-shown side."""
    if not report.pairwise:
        return
    st.markdown("**Pairwise order (comparisons)**")
    rows = [{"Judge (model)": safe_text.text(p.model),
             "Comparisons": ", ".join(f"#{c}" for c in p.comparisons),
             "First shown preferred, minus chance": _pair_figure(p.order.first_shown, signed=True),
             "Same answer in both orders": _pair_figure(p.order.consistency),
             "Both orders picked the first shown": p.order.both_first,
             "Both orders picked the second shown": p.order.both_second}
            for p in report.pairwise]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption("Each pair is asked in both orders. First shown preferred: per pair and "
               "criterion answered with a side in both orders, the share of the two picks "
               "that went to the response shown first, minus the 0.5 of chance (Wilson 95% "
               "interval). Same answer in both orders: position consistency. "
               f"Can't tell yet below {MIN_UNITS} pairs x criteria.")


def _pair_figure(figure: Figure, signed: bool = False) -> str:
    if figure.value is None:
        return f"can't tell yet (n={figure.n}; need about {MIN_UNITS})"
    return _fig(figure, signed=signed)


def _order(effect: OrderEffect | None) -> str:
    """``-0.15 [-0.25, -0.05] (n=80)``; "can't tell yet (n=…)"; "not shuffled"."""
    if effect is None:
        return "not shuffled"
    if not effect.enough:
        return (f"can't tell yet (n={effect.late_minus_early.n}: {effect.early.n} early, "
                f"{effect.late.n} late; need about {MIN_PER_GROUP} in each half)")
    return _fig(effect.late_minus_early, signed=True)
