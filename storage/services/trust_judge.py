"""One judge's trust figures, per criterion and for the score, from the report's frame: the
corrected estimates, length slopes, position and criterion-order effects, and the verdict
sentence. Figures that share bootstrap draws are prepared first and finished together
(each ``prepare_*`` returns the finisher).

In two parts (issue 41): ``prepare_share`` makes what depends on the judges alone (their
values, length slopes over every response, stability, positions; kept by trust_judges while
only people's verdicts change), ``prepare_trust`` what uses people's verdicts (the
corrected estimates, the length slopes within the human verdict, the sentence): only the
reviewed rows are read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grading.agreement import PairwiseAgreement
from grading.trust.criterion_order import OrderEffect
from grading.trust.figures import SharedDraws
from grading.trust.length_bias import LengthBias, prepare_slope
from grading.trust.pairwise_order import PairwiseOrder
from grading.trust.position import PositionEffect, grouped_position_effect
from grading.trust.ppi import CorrectedMean, ppi_mean, summarize
from grading.trust.stability import Stability
from grading.trust.verdict import Named, verdict
from storage.services import trust_positions, trust_samples
from storage.services.trust_frame import (
    Frame,
    code_matrix,
    code_type,
    codes_of,
    column_values,
    values,
)
from storage.services.trust_reads import Reads
from storage.services.trust_types import CriterionTrust, HumanRange, JudgeTrust


def prepare_stability(data, frame: Frame, samples: tuple[int, ...]) -> list:
    """Per criterion, the stability figures of these runs (computed once per judge)."""
    import numpy as np

    return trust_samples.by_criterion(frame, np.stack(
        [codes_of(data, frame, f"run:{rid}") for rid in samples], axis=2))


@dataclass(frozen=True)
class CriterionShare:
    """A judge's figures on one criterion that depend only on the judges."""

    criterion_id: int
    column: int
    summary: object  # the judge's values over every response it decided (ppi.summarize)
    length_all: LengthBias
    stability: Stability | None
    position: PositionEffect | None
    order: OrderEffect | None


@dataclass(frozen=True)
class JudgeShare:
    """What a judge's trust figures need from the judges alone, kept while only people's
    verdicts change (trust_judges)."""

    source_key: str
    codes: object  # responses x criteria category codes, small (-1: no decided verdict)
    criteria: tuple[CriterionShare, ...]
    samples: tuple[int, ...]
    replayed: tuple[int, ...]
    per_criterion: int
    basis: str
    score: object  # the judge's scores over every response (ppi.summarize)
    scored: int  # how many
    pairwise: PairwiseOrder | None

    def value_at(self, rows, column: int, frame: Frame):
        """The judge's values on ``rows`` of a column, as ``trust_frame.values`` gives
        them (NaN: no decided verdict): its codes are kept, not the values (1/8 the
        memory at 100,000 responses)."""
        import numpy as np

        code = self.codes[rows, column].astype(np.int64)
        found = np.full(len(code), np.nan)
        kept = code >= 0
        found[kept] = np.asarray(frame.values[column])[code[kept]]
        return found


@dataclass(frozen=True)
class People:
    """People's verdicts in force on the frame, the review set's sample, the reviewed rows
    and their own bootstrap draws (a few hundred or thousand responses)."""

    human: object  # responses x criteria values (NaN: no verdict in force)
    sample: object  # responses: in the review set's random sample
    rows: object  # the rows with at least one human verdict, ascending
    draws: SharedDraws
    sampled: frozenset[int]  # the sample's response ids


def people_of(frame: Frame, humans, sample: frozenset[int]) -> People:
    import numpy as np

    human = values(code_matrix(humans, frame), frame)
    in_sample = np.zeros(len(frame.positions), dtype=bool)
    in_sample[[frame.positions[r] for r in sample if r in frame.positions]] = True
    rows = np.nonzero(~np.isnan(human).all(axis=1))[0]
    return People(human=human, sample=in_sample, rows=rows, draws=SharedDraws(len(rows)),
                  sampled=sample)


def prepare_share(data, source, reads: Reads, frame: Frame, groups, stability: list | None,
                  per_criterion: int = 1, basis: str = "") -> Callable[[], JudgeShare]:
    """``basis``: where a panel's samples come from (trust_panels); a panel's option and
    criterion positions are its members' (each member was shown its own order), pooled."""
    import numpy as np

    coded = codes_of(data, frame, source.key)
    judged = values(coded, frame)
    # the share keeps the small codes; the frame's matrix can go before the draws' product
    coded = coded.astype(code_type(frame), copy=False)
    samples, replayed = groups.get(source.key, ((), ()))
    shown = (source.member_run_ids if source.is_panel
             else (source.run_id,) if source.run_id is not None else ())

    def shown_column(rid: int, j: int):
        """The values of a run shown (a panel's member), column ``j``: made a column at a
        time, not each member's whole matrix (6.4 MB each at 100,000 responses x 8
        criteria, held side by side through a panel's share)."""
        if rid == source.run_id:
            return judged[:, j]
        return column_values(codes_of(data, frame, f"run:{rid}")[:, j], frame, j)

    finishers = []
    for criterion, j in frame.columns.items():
        f = judged[:, j]
        has_f = ~np.isnan(f)
        summary = summarize(f[has_f])
        rows = np.nonzero(has_f)[0]
        length_all = prepare_slope(frame.lengths[rows], f[rows], None, draws=frame.draws,
                                   rows=rows)
        # per response, the choices of every run shown (a panel: its members), one unit
        shuffled: dict[int, list[tuple[int, int]]] = {}
        for rid in shown:
            for at, count, response in reads.shuffles.get(rid, {}).get(criterion, ()):
                shuffled.setdefault(response, []).append((at, count))
        position = grouped_position_effect(list(shuffled.values())) if shuffled else None
        order = trust_positions.pooled_order_effect(
            [(reads.listings.get(rid, {}).get(criterion), shown_column(rid, j))
             for rid in shown], frame.positions,
            len(frame.columns), scale=(min(frame.values[j]), max(frame.values[j])))
        finishers.append((criterion, j, summary, length_all,
                          stability[j] if stability else None, position, order))
    scores = data.judge_scores.get(source.key, {})
    score = summarize(np.fromiter(scores.values(), dtype=float, count=len(scores)))
    # a comparison is judged by one model; a panel's members' models are in the report's
    # pairwise table
    pairwise = (None if source.is_panel else
                next((p.order for p in reads.pairwise if p.model == source.model), None))

    def finish() -> JudgeShare:
        return JudgeShare(
            source_key=source.key, codes=coded,
            criteria=tuple(CriterionShare(cid, j, summary, la(), stab() if stab else None,
                                          pos, order)
                           for cid, j, summary, la, stab, pos, order in finishers),
            samples=samples, replayed=replayed, per_criterion=per_criterion, basis=basis,
            score=score, scored=len(scores), pairwise=pairwise)

    return finish


def prepare_trust(share: JudgeShare, data, source, vs_human, frame: Frame, people: People,
                  human_range: tuple[HumanRange, ...] = ()) -> Callable[[], JudgeTrust]:
    """A judge's trust figures from its share and people's verdicts: the corrected
    estimates and the length slopes within the human verdict, over the reviewed rows."""
    import numpy as np

    rows = people.rows
    finishers = []
    for c in share.criteria:
        f, y = share.value_at(rows, c.column, frame), people.human[rows, c.column]
        has_f, has_y = ~np.isnan(f), ~np.isnan(y)
        in_sample = has_f & has_y & people.sample[rows]
        corrected = ppi_mean((), f[in_sample].tolist(), y[in_sample].tolist(),
                             summary=c.summary)
        both = np.nonzero(has_f & has_y)[0]
        length_controlled = prepare_slope(
            frame.lengths[rows[both]], f[both], y[both].tolist(), draws=people.draws,
            rows=both)
        finishers.append((c, corrected, length_controlled))
    score = corrected_score(data, source.key, people.sampled, share)
    labels = {c.id: c for c in data.criteria}

    def finish() -> JudgeTrust:
        found = tuple(
            CriterionTrust(
                criterion_id=c.criterion_id, label=labels[c.criterion_id].label,
                unit=("MET rate" if labels[c.criterion_id].options is None
                      else "option value"),
                corrected=corrected, stability=c.stability, length_all=c.length_all,
                length_controlled=lc(), position=c.position, criterion_order=c.order)
            for c, corrected, lc in finishers)
        return JudgeTrust(
            source_key=source.key, label=source.label, agreement=vs_human,
            samples=share.samples, replayed=share.replayed,
            samples_per_criterion=share.per_criterion, criteria=found, score=score,
            cost_per_1000=(None if source.cost_per_grade is None
                           else source.cost_per_grade * 1000),
            unpriced=source.unknown_cost_count,
            pairwise_order=share.pairwise, panel_members=tuple(source.member_run_ids),
            stability_basis=share.basis, human_range=human_range,
            verdict=sentence(vs_human, max(len(share.samples), share.per_criterion), found,
                             share.pairwise, human_range))

    return finish


def corrected_score(data, key: str, sample: frozenset[int],
                    share: JudgeShare | None = None) -> CorrectedMean:
    """``share``: the judge's scores summarised already (used while they are as many)."""
    judge = data.judge_scores.get(key, {})
    human = data.human_scores.get(key, {})
    both = [rid for rid in sorted(human) if rid in judge and rid in sample]
    summary = (share.score if share is not None and share.scored == len(judge)
               else summarize(list(judge.values())))
    return ppi_mean((), [judge[r] for r in both], [human[r] for r in both], summary=summary)


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
