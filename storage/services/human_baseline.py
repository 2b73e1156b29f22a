"""The human baseline: is a judge as good as a second person would be?

Per criterion:

- **Among reviewers**: Cohen's kappa when exactly two reviewers answered, Krippendorff's alpha
  when more did, pooled pairwise percent agreement, and n (responses with two or more
  reviewers' MET/UNMET verdicts).
- **Each judge vs the human verdict** (the decision in force: adjudicated or agreed).
- **Leave one reviewer out**: for each reviewer, the reference is the other reviewers' verdict
  on the responses they share (their majority; ties left out). The reviewer's macro-F1 against
  it gives one point of "the people's range"; the judge's macro-F1 against the very same
  reference and responses, averaged over the left-out reviewers, is compared with that range:
  inside, above or below.

Per reviewer: verdicts given, median seconds per response, agreement with the final verdict.
Every metric comes from ``grading.agreement``; CANNOT_ASSESS is left out as there.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations
from statistics import median
from typing import Literal

from grading.agreement import PairwiseAgreement, compare_verdicts, krippendorff_alpha
from grading.types import Verdict
from storage.dto import CriterionInfo
from storage.services.agreement import HUMAN, AgreementData, Key

Position = Literal["inside", "above", "below", "unknown"]
_DECIDED = (Verdict.MET, Verdict.UNMET)


@dataclass(frozen=True)
class Figure:
    """A number with the count behind it; ``value`` None with ``note`` saying why."""

    value: float | None
    n: int
    note: str = ""


@dataclass(frozen=True)
class JudgeBaseline:
    source_key: str
    label: str
    vs_human: PairwiseAgreement  # against the human verdict in force
    loo_f1: Figure  # mean over left-out reviewers of the judge's macro-F1 vs the others
    position: Position
    sentence: str


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
        values = [f.value for f in self.people_f1.values() if f.value is not None]
        return (min(values), max(values)) if values else None


@dataclass(frozen=True)
class ReviewerStats:
    key: str
    name: str
    verdicts: int  # current verdicts (criteria answered)
    responses: int
    median_seconds: float | None
    timed_responses: int
    vs_final: PairwiseAgreement  # against the human verdict in force


@dataclass(frozen=True)
class HumanBaseline:
    criteria: tuple[CriterionBaseline, ...]
    reviewers: tuple[ReviewerStats, ...]


def _only(verdicts: dict[Key, Verdict], criterion_id: int) -> dict[int, Verdict]:
    return {rid: v for (rid, cid), v in verdicts.items() if cid == criterion_id}


def _majority(values: list[Verdict]) -> Verdict | None:
    counts = Counter(v for v in values if v in _DECIDED)
    if not counts:
        return None
    (top, n), *rest = counts.most_common()
    return None if rest and rest[0][1] == n else top


def _figure(value: float | None, n: int, note: str = "") -> Figure:
    return Figure(value=value, n=n, note=note)


def _position(judge: float | None, people: tuple[float, float] | None) -> Position:
    if judge is None or people is None:
        return "unknown"
    low, high = people
    if judge < low - 1e-9:
        return "below"
    if judge > high + 1e-9:
        return "above"
    return "inside"


def _sentence(label: str, loo: Figure, people: tuple[float, float] | None,
              reviewers: int, position: Position) -> str:
    if position == "unknown":
        if reviewers < 2:
            return (f"{label}: no human baseline yet — it needs at least two reviewers on the "
                    "same responses.")
        return (f"{label}: no comparison — {loo.note or 'too few shared MET/UNMET verdicts'}.")
    low, high = people  # type: ignore[misc]
    span = f"{low:.2f}" if abs(high - low) < 1e-9 else f"{low:.2f}–{high:.2f}"
    where = {"inside": "inside", "above": "above", "below": "below"}[position]
    return (f"{label}: macro-F1 {loo.value:.2f} against the reviewers (n={loo.n}), "
            f"{where} the range of the people ({span}, {reviewers} reviewers).")


def build_baseline(data: AgreementData) -> HumanBaseline:
    judges = [s for s in data.verdict_sources if not s.is_human]
    final = data.verdicts.get(HUMAN, {})
    rows: list[CriterionBaseline] = []
    for criterion in data.criteria:
        cid = criterion.id
        people = {k: _only(v, cid) for k, v in data.reviewer_verdicts.items()}
        people = {k: v for k, v in people.items() if v}
        keys = tuple(sorted(people))
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
            among = _figure(pair.cohens_kappa, pair.pairs_used, pair.note)
        elif len(keys) > 2:
            method = "alpha"
            alpha = krippendorff_alpha([people[k] for k in keys])
            among = _figure(alpha.alpha, alpha.pairable_units, alpha.note)
        percent = _figure(100.0 * agree / total if total else None, total,
                          "" if total else "no shared MET/UNMET verdicts")

        people_f1: dict[str, Figure] = {}
        judge_scores: dict[str, list[tuple[float, int]]] = defaultdict(list)
        judge_maps = {s.key: _only(data.verdicts.get(s.key, {}), cid) for s in judges}
        for left in keys:
            others = [people[k] for k in keys if k != left]
            reference = {}
            for rid in people[left]:
                verdict = _majority([o[rid] for o in others if rid in o])
                if verdict is not None:
                    reference[rid] = verdict
            mine = {rid: people[left][rid] for rid in reference}
            result = compare_verdicts(reference, mine)
            people_f1[left] = _figure(result.balanced_f1, result.pairs_used, result.note)
            for source in judges:
                theirs = {rid: judge_maps[source.key][rid] for rid in reference
                          if rid in judge_maps[source.key]}
                versus = compare_verdicts(reference, theirs)
                if versus.balanced_f1 is not None:
                    judge_scores[source.key].append((versus.balanced_f1, versus.pairs_used))
        span = CriterionBaseline(criterion, keys, method, among, percent, people_f1, ()
                                 ).people_range
        baselines = []
        for source in judges:
            scores = judge_scores.get(source.key, [])
            loo = (_figure(sum(v for v, _ in scores) / len(scores),
                           max(n for _, n in scores))
                   if scores else _figure(None, 0, "the judge and the reviewers share no "
                                                   "MET/UNMET verdicts"))
            position = _position(loo.value, span)
            baselines.append(JudgeBaseline(
                source_key=source.key, label=source.label,
                vs_human=compare_verdicts(_only(final, cid), judge_maps[source.key]),
                loo_f1=loo, position=position,
                sentence=_sentence(source.label, loo, span, len(keys), position)))
        rows.append(CriterionBaseline(criterion, keys, method, among, percent, people_f1,
                                      tuple(baselines)))

    stats = []
    for key, verdicts in sorted(data.reviewer_verdicts.items()):
        seconds = data.reviewer_seconds.get(key, {})
        stats.append(ReviewerStats(
            key=key, name=data.reviewer_names.get(key, key), verdicts=len(verdicts),
            responses=len({rid for rid, _cid in verdicts}),
            median_seconds=median(seconds.values()) if seconds else None,
            timed_responses=len(seconds),
            vs_final=compare_verdicts(final, verdicts)))
    return HumanBaseline(criteria=tuple(rows), reviewers=tuple(stats))


def baseline_json(data: AgreementData, baseline: HumanBaseline) -> dict:
    """The per-criterion figures as plain JSON (the ``agreement`` command prints this)."""

    def pair(p: PairwiseAgreement) -> dict:
        return {"kappa": p.cohens_kappa, "percent_agreement": p.percent_agreement,
                "macro_f1": p.balanced_f1, "n": p.pairs_used,
                "excluded_cannot_assess": p.excluded_cannot_assess, "note": p.note}

    def fig(f: Figure) -> dict:
        return {"value": f.value, "n": f.n, "note": f.note}

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
                },
                "judges": [
                    {"source": j.source_key, "label": j.label,
                     "vs_human_verdict": pair(j.vs_human),
                     "leave_one_out_macro_f1": fig(j.loo_f1),
                     "position": j.position, "sentence": j.sentence}
                    for j in row.judges],
            }
            for row in baseline.criteria
        ],
        "reviewers": [
            {"reviewer": r.name, "key": r.key, "verdicts": r.verdicts,
             "responses": r.responses, "median_seconds_per_response": r.median_seconds,
             "timed_responses": r.timed_responses, "vs_final_verdict": pair(r.vs_final)}
            for r in baseline.reviewers
        ],
    }
