"""What the trust report hands out: plain frozen figures per judge and criterion
(storage.services.trust_report builds them; the Agreement page and trust_json read them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from grading.agreement import PairwiseAgreement
from grading.trust.criterion_order import OrderEffect
from grading.trust.length_bias import LengthBias
from grading.trust.pairwise_order import PairwiseOrder
from grading.trust.position import PositionEffect
from grading.trust.ppi import CorrectedMean
from grading.trust.stability import NOISY_VARIANCE, Stability
from storage.services.baseline_decision import Figure
from storage.services.trust_pairwise import PairwiseJudgeOrder

SAMPLE_RULE = ("people's verdicts on the review set's random sample only; hard cases "
               "reviewed outside it are left out")


@dataclass(frozen=True)
class CriterionTrust:
    criterion_id: int
    label: str
    unit: str  # "MET rate" (binary) or "option value" (multi-choice)
    corrected: CorrectedMean
    stability: Stability | None  # None: fewer than two samples of this judge
    length_all: LengthBias  # every response the judge decided
    length_controlled: LengthBias  # reviewed responses, within the human verdict
    position: PositionEffect | None  # None: no shuffled options recorded
    criterion_order: OrderEffect | None = None  # None: criteria never shuffled (one-shot)


@dataclass(frozen=True)
class HumanRange:
    """Where the judge sits against the people on one criterion (the human baseline:
    storage.services.human_baseline): its macro-F1 against the other reviewers beside each
    reviewer's own."""

    criterion: str
    position: str  # inside / above / below / unclear / unknown (baseline_decision)
    judge_f1: Figure
    people_f1: str  # the reviewers' own figures, as the baseline words them
    reviewers: int


@dataclass(frozen=True)
class JudgeTrust:
    source_key: str
    label: str
    agreement: PairwiseAgreement | None  # vs the human verdict in force (agreement report)
    samples: tuple[int, ...]  # run ids counted as samples of this judge (itself included)
    replayed: tuple[int, ...]  # same judge, left out: every answer came from the cache
    criteria: tuple[CriterionTrust, ...]
    score: CorrectedMean  # the score (0-1 or raw, as the judge's scoring settings give it)
    cost_per_1000: float | None  # USD per 1,000 responses; None when no cost is known
    unpriced: int  # grades whose cost is unknown (left out of the cost)
    verdict: str
    # > 1: the run asked the judge this many times per criterion and its stability comes
    # from those samples (``samples`` is then the run alone)
    samples_per_criterion: int = 1
    # the same model's order effect in stored comparisons (None: it judged none)
    pairwise_order: PairwiseOrder | None = None
    # a panel: its member runs, and where its stability samples come from (trust_panels)
    panel_members: tuple[int, ...] = ()
    stability_basis: str = ""
    # per binary criterion: the judge against the people's own range (empty: not built)
    human_range: tuple[HumanRange, ...] = ()

    @property
    def stability_measured(self) -> bool:
        return self.samples_per_criterion > 1 or len(self.samples) >= 2


@dataclass(frozen=True)
class TrustReport:
    rubric_version_id: int
    dataset_id: int
    sample_size: int  # the review set's random sample (0: none drawn)
    sampled_reviewed: int  # sampled responses with at least one human verdict in force
    reviewed_outside_sample: int  # reviewed responses left out of the corrected estimates
    judges: tuple[JudgeTrust, ...]
    rule: str = SAMPLE_RULE
    noisy_threshold: float = NOISY_VARIANCE
    notes: tuple[str, ...] = field(default_factory=tuple)
    # per model that judged comparisons of this rubric version and dataset
    pairwise: tuple[PairwiseJudgeOrder, ...] = ()

    def judge(self, key: str) -> JudgeTrust:
        return next(j for j in self.judges if j.source_key == key)
