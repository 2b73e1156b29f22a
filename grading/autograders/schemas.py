"""``rubric.autograders.schemas``: the 2.x output models a ``generate_fn`` may return."""

from grading.schemas import (
    CriterionEvaluation,
    OneShotOutput,
    PerCriterionOutput,
    RubricAsJudgeOutput,
)

__all__ = ["CriterionEvaluation", "OneShotOutput", "PerCriterionOutput", "RubricAsJudgeOutput"]
