"""Effective verdicts and scores: the judge's verdicts with the human verdicts in place.

The human verdict of a criterion is the reviewers' decision (storage.services.consensus):
adjudicated or agreed verdicts apply; a disputed criterion keeps the judge's verdict.

No score math here: every number comes from ``grading.aggregation.score_verdicts``, the same
function the graders use, with the run's own stored settings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from grading.aggregation import score_verdicts
from grading.types import Criterion, ScoringSettings, ToGradeInput
from storage.dto import (
    Choice,
    CriterionInfo,
    EffectiveCriterion,
    EffectiveGrade,
    GradeInfo,
    HumanDecision,
    HumanScore,
)


@lru_cache(maxsize=64)
def _made(criteria: tuple[CriterionInfo, ...]) -> tuple[Criterion, ...]:
    """A version's criteria as grading takes them, validated once (the export scores
    thousands of reviewed grades of one version)."""
    return tuple(c.to_criterion() for c in criteria)


def _criteria(criteria: Sequence[CriterionInfo]) -> list[Criterion]:
    try:
        return list(_made(tuple(criteria)))
    except TypeError:  # a criterion that cannot be hashed: made afresh
        return [c.to_criterion() for c in criteria]


def compute_effective_grade(
    *,
    criteria: Sequence[CriterionInfo],
    grade: GradeInfo,
    settings: ScoringSettings,
    to_grade: ToGradeInput,
    humans: Mapping[int, HumanDecision],
) -> EffectiveGrade:
    """Combine one grade with the human decisions (keyed by criterion id)."""
    judged = {c.criterion_id: c for c in grade.criteria}
    rows: list[EffectiveCriterion] = []
    for criterion in criteria:
        judge = judged.get(criterion.id)
        decision = humans.get(criterion.id)
        human = decision.applied if decision is not None else None
        judge_verdict = judge.verdict if judge else None
        judge_option = judge.option if judge else None
        rows.append(EffectiveCriterion(
            criterion_id=criterion.id,
            label=criterion.label,
            judge_verdict=judge_verdict,
            judge_reason=judge.reason if judge else "",
            judge_error=judge.error if judge else None,
            human=human,
            effective_verdict=human.verdict if human else judge_verdict,
            decision=decision,
            judge_option=judge_option,
            effective_option=human.option if human else judge_option,
        ))
    reviewed = sum(1 for row in rows if row.human is not None)
    score, raw, penalty, error = grade.score, grade.raw_score, grade.length_penalty, grade.error

    # A holistic (RubricAsJudge) or wholly failed grade has no per-criterion verdicts: its
    # own score stands until people have reviewed every criterion.
    per_criterion = bool(grade.criteria)
    complete = all(row.effective_choice is not None for row in rows)
    if reviewed and complete and (per_criterion or reviewed == len(rows)):
        verdicts = [row.effective_choice for row in rows]
        aggregate, penalty, score = score_verdicts(
            _criteria(criteria), verdicts, settings, to_grade
        )
        raw, error = aggregate.raw_score, None
    elif reviewed and per_criterion:
        missing = sum(1 for row in rows if row.effective_choice is None)
        score = raw = None
        error = (
            f"{missing} criteria have no verdict (the judge failed on them); "
            "review them to get a score"
        )
    return EffectiveGrade(
        grade_id=grade.id,
        run_id=grade.run_id,
        response_id=grade.response_id,
        judge_score=grade.score,
        judge_raw_score=grade.raw_score,
        score=score,
        raw_score=raw,
        length_penalty=penalty,
        error=error,
        reviewed_count=reviewed,
        criteria_count=len(rows),
        criteria=tuple(rows),
        judge_reason=grade.reason,
        disputed_count=sum(1 for row in rows if row.disputed),
    )


def compute_human_score(
    *,
    response_id: int,
    rubric_version_id: int,
    criteria: Sequence[CriterionInfo],
    humans: Mapping[int, HumanDecision],
    settings: ScoringSettings,
    to_grade: ToGradeInput | None,
) -> HumanScore:
    """The aggregation of human verdicts alone, once every criterion has one (a disputed
    criterion has none until it is adjudicated)."""
    verdicts: list[Choice] = [humans[c.id].choice for c in criteria
                              if c.id in humans and humans[c.id].choice is not None]
    score = raw = None
    if criteria and len(verdicts) == len(criteria):
        aggregate, _penalty, score = score_verdicts(
            _criteria(criteria), verdicts, settings, to_grade
        )
        raw = aggregate.raw_score
    return HumanScore(
        response_id=response_id,
        rubric_version_id=rubric_version_id,
        reviewed_count=len(verdicts),
        criteria_count=len(criteria),
        score=score,
        raw_score=raw,
    )
