"""The ``rubric`` 2.x output models: what a ``generate_fn`` may return instead of text.

Same names and fields as ``rubric.autograders.schemas``; ``.model_json_schema()`` gives a
schema for constrained decoding. Any grader accepts an instance of any of them: it is read
like the same JSON written as text.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class PerCriterionOutput(BaseModel):
    """PerCriterionGrader's answer: one verdict with its explanation."""

    criterion_status: Literal["MET", "UNMET"] = Field(
        description="Whether the criterion is present (MET) or absent (UNMET) in the response."
    )
    explanation: str = Field(description="Brief explanation of the verdict.")


class CriterionEvaluation(BaseModel):
    """One criterion's verdict inside a OneShotOutput."""

    criterion_number: int = Field(description="The 1-based index of the criterion being evaluated.")
    criterion_status: Literal["MET", "UNMET"] = Field(
        description="Whether the criterion is present (MET) or absent (UNMET) in the response."
    )
    explanation: str = Field(description="Brief explanation of the verdict.")


class OneShotOutput(BaseModel):
    """PerCriterionOneShotGrader's answer: one evaluation per criterion."""

    criteria_evaluations: list[CriterionEvaluation] = Field(
        description="List of evaluations for each criterion.", min_length=1
    )


class RubricAsJudgeOutput(BaseModel):
    """RubricAsJudgeGrader's answer: a holistic 0-100 score."""

    overall_score: float = Field(
        description="Holistic score from 0-100 representing overall rubric satisfaction.",
    )
    explanation: str = Field(description="Brief explanation of the score.")
