"""Plain frozen objects handed to callers (UI, job runner, CLI); never live ORM rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from grading.options import CriterionOption
from grading.types import Criterion, ToGradeInput, Verdict
from storage.run_settings import RunSettings

# How the runner's error of a run stopped by its cost cap begins (storage.jobs.runner).
COST_CAP_STOP = "stopped at the cost cap"
# How the error of a run its provider breaker paused begins (storage.jobs.provider_breaker).
PROVIDER_PAUSE = "paused: provider"


@dataclass(frozen=True)
class CriterionInfo:
    id: int
    position: int
    name: str | None
    requirement: str
    weight: float
    section: str | None
    # None: a binary criterion (MET / UNMET); otherwise its options in the author's order.
    options: tuple[CriterionOption, ...] | None = None
    scale_type: str | None = None  # "ordinal" | "nominal" on a multi-choice criterion
    required: bool = False

    @property
    def label(self) -> str:
        return self.name or f"criterion {self.position + 1}"

    @property
    def is_multi_choice(self) -> bool:
        return self.options is not None

    def to_criterion(self) -> Criterion:
        kinds: dict[str, Any] = {"required": self.required}
        if self.options is not None:
            kinds.update(options=self.options, scale_type=self.scale_type or "ordinal")
        return Criterion(
            weight=self.weight, requirement=self.requirement, name=self.name,
            section=self.section, **kinds,
        )


@dataclass(frozen=True)
class RubricVersionInfo:
    id: int
    rubric_id: int
    rubric_name: str
    number: int
    note: str
    created_at: datetime
    frozen_at: datetime | None
    criteria: tuple[CriterionInfo, ...]
    created_by: str | None = None

    @property
    def frozen(self) -> bool:
        return self.frozen_at is not None

    def to_criteria(self) -> list[Criterion]:
        return [c.to_criterion() for c in self.criteria]


@dataclass(frozen=True)
class RubricInfo:
    id: int
    name: str
    description: str
    archived: bool
    created_at: datetime
    version_count: int
    latest_version_id: int


@dataclass(frozen=True)
class DatasetInfo:
    id: int
    name: str
    description: str
    archived: bool
    created_at: datetime
    response_count: int
    imported_by: str | None = None


@dataclass(frozen=True)
class ResponseInfo:
    id: int
    dataset_id: int
    external_id: str | None
    query: str | None
    output: str
    thinking: str | None
    metadata: dict[str, Any]
    created_at: datetime
    reference: str | None = None  # the reference answer shown to the judge, if any

    @property
    def to_grade(self) -> ToGradeInput:
        """What the graders and the length penalty read: the parts as uploaded, never
        re-parsed for ``<thinking>``/``<output>`` tags (a plain output may contain them)."""
        return {"thinking": self.thinking or "", "output": self.output}


def run_status_words(status: str, failed: int, error: str | None = None) -> str:
    """A run's status as a person reads it (the app and the command line say the same): a
    run its cost cap stopped is not "failed", and a run that ended with failed grades is not
    plainly "done"."""
    if status == "failed" and (error or "").startswith(COST_CAP_STOP):
        return "stopped at its cost cap"
    if status == "failed" and (error or "").startswith(PROVIDER_PAUSE):
        return "paused"
    if status == "done" and failed:
        return f"finished with {failed:,} failed"
    return status


@dataclass(frozen=True)
class RunInfo:
    id: int
    name: str
    rubric_version_id: int
    dataset_id: int
    grader: str
    model: str
    settings: RunSettings
    status: str
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    claimed_by: str | None
    heartbeat_at: datetime | None
    response_count: int
    done_count: int
    failed_count: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float
    unknown_cost_count: int
    launched_by: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed", "cancelled")

    @property
    def graded_count(self) -> int:
        return self.done_count + self.failed_count

    @property
    def stopped_by_cost_cap(self) -> bool:
        """The run ended because it reached its cost cap (the runner's words), not a fault."""
        return self.status == "failed" and (self.error or "").startswith(COST_CAP_STOP)

    @property
    def paused_by_provider(self) -> bool:
        """The provider kept failing and the run paused (``storage.jobs.provider_breaker``):
        resumed, it probes the provider with one call first."""
        return self.status == "failed" and (self.error or "").startswith(PROVIDER_PAUSE)

    @property
    def status_words(self) -> str:
        return run_status_words(self.status, self.failed_count, self.error)


Choice = Verdict | str  # a binary verdict, or the label of a chosen option


@dataclass(frozen=True)
class CriterionGradeInfo:
    criterion_id: int
    position: int
    verdict: Verdict | None
    reason: str
    error: str | None
    # The chosen option's label on a multi-choice criterion (``verdict`` is then MET, or
    # CANNOT_ASSESS for an NA option); the judge's option order when it was shuffled.
    option: str | None = None
    shuffle_order: tuple[int, ...] | None = None
    # Each sample's choice when the judge was asked several times (``verdict``/``option``
    # are their majority); None when it was asked once.
    samples: tuple[str | None, ...] | None = None
    # Where the criterion was listed (1 = first) in a one-shot prompt that shuffled the
    # criteria (run setting shuffle_criteria); None when not shuffled.
    prompt_position: int | None = None

    @property
    def choice(self) -> Choice | None:
        """What the aggregation reads: the option label if one was chosen, else the verdict."""
        return self.option if self.option is not None else self.verdict


@dataclass(frozen=True)
class GradeInfo:
    id: int
    run_id: int
    response_id: int
    score: float | None
    raw_score: float | None
    llm_raw_score: float | None
    error: str | None
    cannot_assess_count: int
    length_penalty: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    cost: float | None
    latency_s: float | None
    created_at: datetime
    criteria: tuple[CriterionGradeInfo, ...] = ()
    reason: str | None = None


@dataclass(frozen=True)
class HumanVerdictInfo:
    id: int
    response_id: int
    rubric_version_id: int
    criterion_id: int
    seq: int
    verdict: Verdict
    reviewer: str
    note: str
    created_at: datetime
    replaces_id: int | None
    # The verdict this one replaced in the same stream (None for the first one).
    previous_verdict: Verdict | None
    # The stable identity of who saved it (Actor.key); ``reviewer`` is the name shown.
    reviewer_key: str = ""
    # An adjudicator's verdict (the adjudication stream) rather than a reviewer's own.
    adjudication: bool = False
    review_seconds: float | None = None
    # The chosen option's label on a multi-choice criterion (see CriterionGradeInfo).
    option: str | None = None
    previous_option: str | None = None

    @property
    def choice(self) -> Choice:
        return self.option if self.option is not None else self.verdict

    @property
    def previous_choice(self) -> Choice | None:
        return self.previous_option if self.previous_option is not None else (
            self.previous_verdict)


DecisionStatus = Literal["adjudicated", "agreed", "disputed"]


@dataclass(frozen=True)
class HumanDecision:
    """The human verdict on one criterion of one response, from every reviewer's verdict.

    The rule (docs/design/consensus.md): an adjudicator's verdict when there is one;
    otherwise the reviewers' verdict when all who answered agree; otherwise disputed — no
    human verdict applies and the judge's verdict stands.
    """

    criterion_id: int
    status: DecisionStatus
    verdict: Verdict | None  # None when disputed
    applied: HumanVerdictInfo | None  # the verdict that stands for the decision
    reviews: tuple[HumanVerdictInfo, ...]  # each reviewer's current verdict, oldest first
    adjudication: HumanVerdictInfo | None
    # The rubric version number the verdict in force was given on, when it is carried over
    # from an earlier version with the same requirement text; None when given on this one.
    carried_from: int | None = None

    @property
    def disputed(self) -> bool:
        return self.status == "disputed"

    @property
    def choice(self) -> Choice | None:
        """The decided option label or verdict (None when disputed)."""
        return None if self.applied is None or self.verdict is None else self.applied.choice


@dataclass(frozen=True)
class EffectiveCriterion:
    criterion_id: int
    label: str
    judge_verdict: Verdict | None
    judge_reason: str
    judge_error: str | None
    human: HumanVerdictInfo | None  # the human verdict applied (None: none, or disputed)
    effective_verdict: Verdict | None
    decision: HumanDecision | None = None
    # Multi-choice criteria: the judge's option label and the option in force.
    judge_option: str | None = None
    effective_option: str | None = None

    @property
    def judge_choice(self) -> Choice | None:
        return self.judge_option if self.judge_option is not None else self.judge_verdict

    @property
    def effective_choice(self) -> Choice | None:
        """What the effective score reads: the option label in force, else the verdict."""
        if self.effective_option is not None:
            return self.effective_option
        return self.effective_verdict

    @property
    def overridden(self) -> bool:
        return self.human is not None and self.human.choice != self.judge_choice

    @property
    def disputed(self) -> bool:
        return self.decision is not None and self.decision.disputed


@dataclass(frozen=True)
class EffectiveGrade:
    """A grade with the current human verdicts in place of the judge's."""

    grade_id: int
    run_id: int
    response_id: int
    judge_score: float | None
    judge_raw_score: float | None
    score: float | None
    raw_score: float | None
    length_penalty: float | None
    error: str | None
    reviewed_count: int
    criteria_count: int
    criteria: tuple[EffectiveCriterion, ...] = field(default=())
    disputed_count: int = 0
    # The holistic judge's explanation (RubricAsJudge grades only).
    judge_reason: str | None = None

    @property
    def fully_reviewed(self) -> bool:
        return self.reviewed_count == self.criteria_count


@dataclass(frozen=True)
class HumanScore:
    """A response's score from human verdicts alone (None until every criterion is reviewed)."""

    response_id: int
    rubric_version_id: int
    reviewed_count: int
    criteria_count: int
    score: float | None
    raw_score: float | None

    @property
    def complete(self) -> bool:
        return self.reviewed_count == self.criteria_count


@dataclass(frozen=True)
class DeletionSummary:
    """What a delete removed (or would remove)."""

    runs: int
    grades: int
    responses: int
    human_verdicts: int  # people's verdicts, and their reviews of comparison pairs
    comparisons: int = 0
    panels: int = 0  # judge panels built on the runs that go
    pair_panels: int = 0  # panels of pairwise judges built on the comparisons that go

    def panels_words(self) -> str:
        """", and the 2 judge panels built on them" ("" when none): the panels that go
        too, after the runs and comparisons of a confirmation or the audit log."""
        parts = [f"{n} {word}" for n, word in (
            (self.panels, "judge panel" if self.panels == 1 else "judge panels"),
            (self.pair_panels, "panel of pairwise judges" if self.pair_panels == 1
             else "panels of pairwise judges")) if n]
        return f", and the {' and '.join(parts)} built on them" if parts else ""


@dataclass(frozen=True)
class PersonInfo:
    key: str
    name: str
    role: str | None  # None: signed in, no role yet
    role_set_by: str | None
    role_set_at: datetime | None
    last_seen_at: datetime | None
    from_environment: bool = False  # an admin named in RUBRIC_WORKBENCH_ADMINS


@dataclass(frozen=True)
class AuditEvent:
    id: int
    actor: str
    action: str
    target_kind: str
    target_id: int | None
    target_name: str
    detail: str
    created_at: datetime
