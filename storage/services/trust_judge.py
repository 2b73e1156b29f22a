"""One judge's trust figures, per criterion and for the score, from the report's frame: the
corrected estimates, length slopes, position and criterion-order effects, and the verdict
sentence. Figures that share bootstrap draws are prepared first and finished together
(``prepare_judge`` returns the finisher)."""

from __future__ import annotations

from collections.abc import Callable

from grading.agreement import PairwiseAgreement
from grading.trust.length_bias import prepare_slope
from grading.trust.pairwise_order import PairwiseOrder
from grading.trust.position import grouped_position_effect
from grading.trust.ppi import CorrectedMean, ppi_mean
from grading.trust.verdict import Named, verdict
from storage.services import trust_positions, trust_samples
from storage.services.trust_frame import Frame, codes_of, values
from storage.services.trust_reads import Reads
from storage.services.trust_types import CriterionTrust, HumanRange, JudgeTrust


def prepare_stability(data, frame: Frame, samples: tuple[int, ...]) -> list:
    """Per criterion, the stability figures of these runs (computed once per judge)."""
    import numpy as np

    return trust_samples.by_criterion(frame, np.stack(
        [codes_of(data, frame, f"run:{rid}") for rid in samples], axis=2))


def prepare_judge(report, vs_human, source, reads: Reads, frame: Frame, groups,
                  stability: list | None, per_criterion: int = 1, basis: str = "",
                  human_range: tuple[HumanRange, ...] = ()) -> Callable[[], JudgeTrust]:
    """``basis``: where a panel's samples come from (trust_panels); a panel's option and
    criterion positions are its members' (each member was shown its own order), pooled."""
    import numpy as np

    data = report.data
    judged = values(codes_of(data, frame, source.key), frame)
    samples, replayed = groups.get(source.key, ((), ()))
    shown = (source.member_run_ids if source.is_panel
             else (source.run_id,) if source.run_id is not None else ())
    shown_values = {rid: judged if rid == source.run_id
                    else values(codes_of(data, frame, f"run:{rid}"), frame) for rid in shown}
    finishers = []
    for criterion, j in frame.columns.items():
        f, y = judged[:, j], frame.human[:, j]
        has_f, has_y = ~np.isnan(f), ~np.isnan(y)
        in_sample = has_f & has_y & frame.sample
        corrected = ppi_mean(f[has_f].tolist(), f[in_sample].tolist(), y[in_sample].tolist())
        rows = np.nonzero(has_f)[0]
        length_all = prepare_slope(frame.lengths[rows], f[rows], None, draws=frame.draws,
                                   rows=rows)
        both = np.nonzero(has_f & has_y)[0]
        length_controlled = prepare_slope(
            frame.lengths[both], f[both], y[both].tolist(), draws=frame.reviewed_draws,
            rows=[frame.reviewed[int(r)] for r in both])
        # per response, the choices of every run shown (a panel: its members), one unit
        shuffled: dict[int, list[tuple[int, int]]] = {}
        for rid in shown:
            for at, count, response in reads.shuffles.get(rid, {}).get(criterion, ()):
                shuffled.setdefault(response, []).append((at, count))
        position = grouped_position_effect(list(shuffled.values())) if shuffled else None
        order = trust_positions.pooled_order_effect(
            [(reads.listings.get(rid, {}).get(criterion), shown_values[rid][:, j])
             for rid in shown], frame.positions,
            len(frame.columns), scale=(min(frame.values[j]), max(frame.values[j])))
        finishers.append((criterion, corrected, length_all, length_controlled,
                          stability[j] if stability else None, position, order))
    score = corrected_score(data, source.key, reads.sample)
    # a comparison is judged by one model; a panel's members' models are in the report's
    # pairwise table
    pairwise = (None if source.is_panel else
                next((p.order for p in reads.pairwise if p.model == source.model), None))
    labels = {c.id: c for c in data.criteria}

    def finish() -> JudgeTrust:
        rows = tuple(
            CriterionTrust(
                criterion_id=cid, label=labels[cid].label,
                unit="MET rate" if labels[cid].options is None else "option value",
                corrected=corrected, stability=stab() if stab else None,
                length_all=la(), length_controlled=lc(), position=pos, criterion_order=order)
            for cid, corrected, la, lc, stab, pos, order in finishers)
        return JudgeTrust(
            source_key=source.key, label=source.label, agreement=vs_human,
            samples=samples, replayed=replayed, samples_per_criterion=per_criterion,
            criteria=rows, score=score,
            cost_per_1000=(None if source.cost_per_grade is None
                           else source.cost_per_grade * 1000),
            unpriced=source.unknown_cost_count,
            pairwise_order=pairwise, panel_members=tuple(source.member_run_ids),
            stability_basis=basis, human_range=human_range,
            verdict=sentence(vs_human, max(len(samples), per_criterion), rows, pairwise,
                             human_range))

    return finish


def corrected_score(data, key: str, sample: frozenset[int]) -> CorrectedMean:
    judge = data.judge_scores.get(key, {})
    human = data.human_scores.get(key, {})
    both = [rid for rid in sorted(judge) if rid in human and rid in sample]
    return ppi_mean(list(judge.values()), [judge[r] for r in both], [human[r] for r in both])


_RANGE_WORDS = (("inside", "like a person does on"), ("above", "better than the people on"),
                ("below", "worse than the people on"),
                ("unclear", "can't tell yet against the people on"))


def range_phrase(ranges: tuple[HumanRange, ...]) -> str | None:
    """Where the judge sits against the people's own range (the human baseline), by
    criterion; None when no criterion has a baseline."""
    parts = []
    for position, words in _RANGE_WORDS:
        named = [r.criterion for r in ranges if r.position == position]
        if named:
            parts.append(f"{words} {', '.join(named)}")
    return "; ".join(parts) or None


def sentence(vs_human: PairwiseAgreement | None, samples: int, rows,
             pairwise: PairwiseOrder | None = None,
             human_range: tuple[HumanRange, ...] = ()) -> str:
    said = None
    if vs_human is not None and vs_human.cohens_kappa is not None:
        said = (f"agrees with people at κ {vs_human.cohens_kappa:.2f} "
                f"(n={vs_human.pairs_used})")
    against = range_phrase(human_range)
    if against:
        said = f"{said} — {against}" if said else against
    measured = [r for r in rows if r.stability is not None
                and r.stability.flip_rate.n > 0]
    slopes = []
    for r in rows:
        if r.length_controlled.slope.value is not None:
            slopes.append(Named(r.label, r.length_controlled.slope, r.unit))
        elif r.length_all.slope.value is not None:
            slopes.append(Named(f"{r.label} (not controlled for quality)",
                                r.length_all.slope, r.unit))
    return verdict(
        agreement=said, samples=samples,
        noisy=[r.label for r in measured if r.stability.noisy],
        stability_measured=len(measured), slopes=slopes,
        positions=[Named(r.label, r.position.excess) for r in rows if r.position],
        orders=[Named(r.label, r.criterion_order.late_minus_early, r.unit)
                for r in rows if r.criterion_order],
        pairwise=pairwise.first_shown if pairwise is not None else None)
