"""Plain frozen objects handed to callers (UI, job runner, CLI); never live ORM rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from grading.types import Criterion, ToGradeInput, Verdict
from storage.run_settings import RunSettings


@dataclass(frozen=True)
class CriterionInfo:
    id: int
    position: int
    name: str | None
    requirement: str
    weight: float
    section: str | None

    @property
    def label(self) -> str:
        return self.name or f"criterion {self.position + 1}"

    def to_criterion(self) -> Criterion:
        return Criterion(
            weight=self.weight, requirement=self.requirement, name=self.name,
            section=self.section,
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

    @property
    def to_grade(self) -> ToGradeInput:
        """What the graders and the length penalty read: the parts as uploaded, never
        re-parsed for ``<thinking>``/``<output>`` tags (a plain output may contain them)."""
        return {"thinking": self.thinking or "", "output": self.output}


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


@dataclass(frozen=True)
class CriterionGradeInfo:
    criterion_id: int
    position: int
    verdict: Verdict | None
    reason: str
    error: str | None


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
    # The verdict this one replaced (None for the first verdict on the criterion).
    previous_verdict: Verdict | None


@dataclass(frozen=True)
class EffectiveCriterion:
    criterion_id: int
    label: str
    judge_verdict: Verdict | None
    judge_reason: str
    judge_error: str | None
    human: HumanVerdictInfo | None
    effective_verdict: Verdict | None

    @property
    def overridden(self) -> bool:
        return self.human is not None and self.human.verdict != self.judge_verdict


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
    human_verdicts: int


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
