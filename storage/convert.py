"""ORM rows -> plain frozen objects (storage.dto)."""

from __future__ import annotations

from grading.options import CriterionOption
from grading.types import Verdict
from storage import models as m
from storage.dto import (
    CriterionGradeInfo,
    CriterionInfo,
    DatasetInfo,
    GradeInfo,
    HumanVerdictInfo,
    ResponseInfo,
    RubricVersionInfo,
    RunInfo,
)
from storage.run_settings import RunSettings


def criterion_info(row: m.CriterionRow) -> CriterionInfo:
    options = None if row.options is None else tuple(
        CriterionOption.model_validate(o) for o in row.options)
    return CriterionInfo(
        id=row.id, position=row.position, name=row.name, requirement=row.requirement,
        weight=row.weight, section=row.section, options=options,
        scale_type=row.scale_type if options is not None else None,
        required=bool(row.required),
    )


def version_info(row: m.RubricVersionRow) -> RubricVersionInfo:
    return RubricVersionInfo(
        id=row.id, rubric_id=row.rubric_id, rubric_name=row.rubric.name, number=row.number,
        note=row.note, created_at=row.created_at, frozen_at=row.frozen_at,
        criteria=tuple(criterion_info(c) for c in row.criteria), created_by=row.created_by,
    )


def dataset_info(row: m.DatasetRow, response_count: int) -> DatasetInfo:
    return DatasetInfo(
        id=row.id, name=row.name, description=row.description, archived=row.archived,
        created_at=row.created_at, response_count=response_count, imported_by=row.imported_by,
    )


def response_info(row: m.ResponseRow) -> ResponseInfo:
    return ResponseInfo(
        id=row.id, dataset_id=row.dataset_id, external_id=row.external_id, query=row.query,
        output=row.output, thinking=row.thinking, metadata=dict(row.meta or {}),
        created_at=row.created_at, reference=row.reference,
    )


def run_info(row: m.RunRow) -> RunInfo:
    return RunInfo(
        id=row.id, name=row.name, rubric_version_id=row.rubric_version_id,
        dataset_id=row.dataset_id, grader=row.grader, model=row.model,
        settings=RunSettings.model_validate(row.settings), status=row.status, error=row.error,
        created_at=row.created_at, started_at=row.started_at, finished_at=row.finished_at,
        claimed_by=row.claimed_by, heartbeat_at=row.heartbeat_at,
        response_count=row.response_count, done_count=row.done_count,
        failed_count=row.failed_count, prompt_tokens=row.prompt_tokens,
        completion_tokens=row.completion_tokens, total_tokens=row.total_tokens,
        cost=row.cost, unknown_cost_count=row.unknown_cost_count, launched_by=row.launched_by,
    )


def _verdict(value: str | None) -> Verdict | None:
    return None if value is None else Verdict(value)


def grade_info(row: m.GradeRow, criteria: list[m.GradeCriterionRow] | None = None) -> GradeInfo:
    rows = row.criteria if criteria is None else criteria
    return GradeInfo(
        id=row.id, run_id=row.run_id, response_id=row.response_id, score=row.score,
        raw_score=row.raw_score, llm_raw_score=row.llm_raw_score, error=row.error,
        cannot_assess_count=row.cannot_assess_count, length_penalty=row.length_penalty,
        prompt_tokens=row.prompt_tokens, completion_tokens=row.completion_tokens,
        total_tokens=row.total_tokens, cost=row.cost, latency_s=row.latency_s,
        created_at=row.created_at, reason=row.reason,
        criteria=tuple(
            CriterionGradeInfo(
                criterion_id=c.criterion_id, position=c.position, verdict=_verdict(c.verdict),
                reason=c.reason, error=c.error, option=c.option,
                shuffle_order=None if c.shuffle_order is None else tuple(c.shuffle_order),
                samples=None if c.samples is None else tuple(c.samples),
                prompt_position=c.prompt_position,
            )
            for c in sorted(rows, key=lambda c: c.position)
        ),
    )


def human_verdict_info(
    row: m.HumanVerdictRow, previous: m.HumanVerdictRow | None
) -> HumanVerdictInfo:
    return HumanVerdictInfo(
        id=row.id, response_id=row.response_id, rubric_version_id=row.rubric_version_id,
        criterion_id=row.criterion_id, seq=row.seq, verdict=Verdict(row.verdict),
        reviewer=row.reviewer, note=row.note, created_at=row.created_at,
        replaces_id=row.replaces_id,
        previous_verdict=None if previous is None else Verdict(previous.verdict),
        reviewer_key=row.reviewer_key, adjudication=row.adjudication,
        review_seconds=row.review_seconds, option=row.option,
        previous_option=None if previous is None else previous.option,
    )
